// Conversations kept in this browser (localStorage): reading and writing them, and what a
// conversation sends. Which one is shown, and drawing them, is chat.js's.

/**
 * Conversations are kept in this browser (localStorage), several of them: each a list of entries
 * {role, text, images?, thinking?, stats?, failed?, excluded?}, drawn again as they were after a reload.
 * `images`: a user message's attached images, as data URLs. `excluded`: a user message whose turn
 * failed before any text; it is shown but not sent again.
 */
const CONVERSATIONS_STORAGE = 'local-inference-server.conversations';
/** Where the first version of the page kept its one conversation: read once, then moved. */
const OLD_CONVERSATION_STORAGE = 'local-inference-server.conversation';

export const newConversation = () => ({ id: `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`, updated: Date.now(), entries: [] });

/** Writes every conversation that has entries, and which one is `current`. */
export function saveConversations(conversations, current) {
  try {
    // An empty conversation is not listed (a new one is made again after a reload).
    const kept = conversations.filter((c) => c.entries.length > 0);
    const write = (list) => localStorage.setItem(CONVERSATIONS_STORAGE, JSON.stringify({ version: 1, current: current.id, conversations: list }));
    try {
      write(kept);
    } catch {
      // Images fill storage first (a screenshot is a megabyte or more): the text is kept without them.
      write(kept.map((c) => ({ ...c, entries: c.entries.map(({ images, ...rest }) => rest) })));
    }
  } catch {
    // storage full or disabled: the conversations stay in the page only
  }
}

/** An image the page attached: a base64 data URL of an image type (anything else read back is dropped). */
const isImageUrl = (url) => typeof url === 'string' && /^data:image\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/]*={0,2}$/.test(url);

/** Entries read back from storage, keeping only what the page wrote (strings where strings were). */
function validEntries(list) {
  if (!Array.isArray(list)) return [];
  return list
    .filter((e) => e && (e.role === 'user' || e.role === 'assistant') && typeof e.text === 'string')
    .map((e) => ({
      role: e.role,
      text: e.text,
      ...(e.role === 'user' && Array.isArray(e.images) && e.images.length > 0 && e.images.every(isImageUrl) ? { images: e.images } : {}),
      ...(typeof e.thinking === 'string' ? { thinking: e.thinking } : {}),
      ...(typeof e.stats === 'string' ? { stats: e.stats } : {}),
      ...(e.failed === true ? { failed: true } : {}),
      ...(e.excluded === true ? { excluded: true } : {}),
    }));
}

function readStorage(key) {
  try {
    return JSON.parse(localStorage.getItem(key) || 'null');
  } catch {
    return null;
  }
}

/** The conversations kept, and the one shown last (a new empty one when there is none). */
export function readConversations() {
  let conversations = [];
  const saved = readStorage(CONVERSATIONS_STORAGE);
  if (saved && Array.isArray(saved.conversations)) {
    conversations = saved.conversations
      .filter((c) => c && typeof c.id === 'string')
      .map((c) => ({ id: c.id, updated: Number(c.updated) || 0, entries: validEntries(c.entries) }))
      .filter((c) => c.entries.length > 0);
  }
  const old = readStorage(OLD_CONVERSATION_STORAGE);
  if (old && Array.isArray(old.shown)) {
    const entries = validEntries(old.shown);
    // That version dropped a failed turn's message from what it sent: the same, by `excluded`.
    entries.forEach((e, i) => {
      if (e.role === 'assistant' && e.failed && e.text === '' && entries[i - 1]?.role === 'user') entries[i - 1].excluded = true;
    });
    if (entries.length > 0) conversations.push({ ...newConversation(), entries });
    localStorage.removeItem(OLD_CONVERSATION_STORAGE);
  }
  let current = conversations.find((c) => saved && c.id === saved.current) || null;
  if (!current) {
    current = newConversation();
    conversations.push(current);
  }
  return { conversations, current };
}

/**
 * What a conversation sends: its messages, less failed turns and empty replies. A message with
 * images is the OpenAI dialect's list of parts: its text, then each image as an image_url data URL.
 */
export const messagesOf = (conversation) =>
  conversation.entries.filter((e) => !e.excluded && (e.role === 'user' || e.text !== '')).map((e) => ({ role: e.role, content: contentOf(e) }));

function contentOf(entry) {
  if (!entry.images || entry.images.length === 0) return entry.text;
  const images = entry.images.map((url) => ({ type: 'image_url', image_url: { url } }));
  return entry.text === '' ? images : [{ type: 'text', text: entry.text }, ...images];
}

/** A conversation's name in the list: its first message, cut short. */
export function titleOf(conversation) {
  const first = conversation.entries.find((e) => e.role === 'user');
  const line = first ? first.text.trim().split('\n')[0] : '';
  if (!line) return first && first.images ? 'An image' : 'New conversation';
  return line.length > 48 ? `${line.slice(0, 47)}…` : line;
}
