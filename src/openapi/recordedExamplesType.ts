/**
 * Real answers: success bodies by operationId then example name, and failure bodies
 * (the same on every route) by status then example name.
 */
export interface RecordedExamples {
  readonly success: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly failures: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}
