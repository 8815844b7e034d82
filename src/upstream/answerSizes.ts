import { GATE } from '../auth/verificationGate.js';

/**
 * The largest answer each upstream may send the gateway, from the contracts: an answer past it is refused
 * unread (502), so what the platform's places hold at once is bounded by places × PLATFORM_ANSWER_MAX_BYTES.
 *
 * Platform (platform.graphql and the queries the gateway sends): Rankings' answer is the largest, two rank
 * snapshots of every keyword the site tracks (keyword id, keyword and position in the newest, id and position
 * in the start one). Keywords' answer is two pages of at most 200 rows (the platform refuses larger pages),
 * KeywordsPage's one; AiVisibility and LatestAudit hold a few numbers per site. The contracts bound neither
 * how many keywords a site tracks nor the length of an id or a keyword: those three figures are ours, and
 * stated in the README. Each JSON row is counted at its longest: its field names, quotes and separators, an
 * integer of 11 characters, strings of their most bytes without escapes.
 */
export const PLATFORM_ANSWER_FIGURES = {
  /** Keywords tracked by one site. */
  trackedKeywords: 5_000,
  /** An id in UTF-8 (the key service's key ids are 30). */
  idBytes: 64,
  /** A keyword or a cluster label in UTF-8: 80 characters, the longest keyword search advertising takes. */
  textBytes: 160,
} as const;

/** A rank snapshot's entry, `{"keywordId":"…","keyword":"…","position":…},`, without its keyword when `withKeyword` is false. */
function rankEntryBytes({ idBytes, textBytes }: typeof PLATFORM_ANSWER_FIGURES, withKeyword: boolean): number {
  const entry = '{"keywordId":"","position":-2147483648},'.length + idBytes;
  return withKeyword ? entry + ',"keyword":""'.length + textBytes : entry;
}

/** A keyword row, `{"node":{"keyword":"…","position":…,"searchVolume":…,"cluster":{"label":"…"}}},`. */
function keywordRowBytes({ textBytes }: typeof PLATFORM_ANSWER_FIGURES): number {
  const framing = '{"node":{"keyword":"","position":-2147483648,"searchVolume":-2147483648,"cluster":{"label":""}}},';
  return framing.length + 2 * textBytes;
}

/** Sites per answer (a slug may match several) and the envelope around them: a generous fixed allowance. */
const ENVELOPE_BYTES = 64 * 1024;

export function platformAnswerMaxBytes(figures: typeof PLATFORM_ANSWER_FIGURES = PLATFORM_ANSWER_FIGURES): number {
  const rankings = figures.trackedKeywords * (rankEntryBytes(figures, true) + rankEntryBytes(figures, false));
  const keywords = 2 * 200 * keywordRowBytes(figures);
  return Math.max(rankings, keywords) + ENVELOPE_BYTES;
}

export const PLATFORM_ANSWER_MAX_BYTES = platformAnswerMaxBytes();

/**
 * Key service (key-service.md): verify's answer, a key and an organization, is the largest the gateway
 * reads. A key's name is at most 100 characters; its permissions are four known words and possibly unknown
 * ones, which only this bound limits. Far above the few hundred bytes a real answer has.
 */
export const KEY_SERVICE_ANSWER_MAX_BYTES = 64 * 1024;

/**
 * Connections to the key service: the verification gate's open calls at most, a usage delivery, the event stream
 * and a readiness probe, with room to spare: a verify never waits for a connection the gate thinks it has.
 */
export const KEY_SERVICE_CONNECTIONS = GATE.maxOpen + 4;
