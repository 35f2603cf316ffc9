/* The DOM helpers of sleuth's pages (the search page and the systems' pages load this first). Server text only
   ever reaches a page through textContent, never parsed as HTML. */
"use strict";

const $ = (id) => document.getElementById(id);

/** An element with a class and text (text is set with textContent, so it is never parsed as HTML). */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
