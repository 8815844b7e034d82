/** Placeholder until recorded. */
export const RECORDED_EXAMPLES: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, unknown>>>>>> = {};
