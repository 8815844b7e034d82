/**
 * Waits until `condition` holds, checking every 5 ms; rejects after `withinMs` with
 * `what` so a stuck test says what it was waiting for. For events that arrive over
 * a real socket, where no promise marks the moment.
 */
export async function eventually(what: string, condition: () => boolean, withinMs = 3000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
