DROP FUNCTION latch_claim_candidates(timestamptz, bigint, text, text[], text[]);
