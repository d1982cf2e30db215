// The page's two DOM helpers, shared by every module of the playground.

/** An element by id. */
export const $ = (id) => document.getElementById(id);

/** One element, its text set as text. */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
