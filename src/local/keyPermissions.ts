/**
 * The permissions a key may carry (public-rest-v1.md 5.2) and what each grants. Any
 * other string is stored by the key service but grants nothing, so the key CLI refuses
 * it unless told otherwise.
 */
export const KEY_PERMISSIONS: Readonly<Record<string, string>> = Object.freeze({
  read: 'GET on the public /v1/api/* routes',
  write: 'nothing on these routes (reserved for write routes)',
  audit: "the content-management plugin's audit routes, not these routes",
  content: "the content-management plugin's content routes, not these routes",
});

/** The permissions in `requested` that are none of KEY_PERMISSIONS. */
export function unknownPermissions(requested: readonly string[]): string[] {
  return requested.filter((permission) => !Object.hasOwn(KEY_PERMISSIONS, permission));
}

/** One line per permission, for the CLI's help and its refusal. */
export function describePermissions(): string {
  return Object.entries(KEY_PERMISSIONS)
    .map(([name, grants]) => `  ${name.padEnd(8)} ${grants}`)
    .join('\n');
}
