/** Response bodies by operationId, then status, then example name. */
export type RecordedExamples = Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, unknown>>>>>>;
