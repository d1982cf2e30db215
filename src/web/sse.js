// Server-sent events read from a fetch body.

/**
 * Server-sent events from a fetch body: calls onData with each event's data (the lines joined), as
 * the SSE specification reads them; comments (pings) are skipped.
 */
export async function readEvents(body, onData) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = raw.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).replace(/^ /, '')).join('\n');
      if (data !== '' && onData(data) === false) {
        await reader.cancel();
        return;
      }
    }
  }
}
