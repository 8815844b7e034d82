/**
 * Compares strings by Unicode code point, as the platform orders keyword text.
 * JavaScript's `<` compares UTF-16 code units, which puts U+E000–U+FFFF after
 * astral characters; code point order does not.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const l = left.next();
    const r = right.next();
    if (l.done) return r.done ? 0 : -1;
    if (r.done) return 1;
    const diff = (l.value.codePointAt(0) ?? 0) - (r.value.codePointAt(0) ?? 0);
    if (diff !== 0) return diff;
  }
}
