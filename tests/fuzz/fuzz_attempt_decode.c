/* libFuzzer harness for mc_decode_attempt, the retry processor's decoder
 * (its input topic can be written by anyone with access to it), in either
 * version of the schema. Beyond "no crash" it checks that every error
 * explains itself, that memory stays proportional to the input, and that a
 * decoded attempt re-encodes stably. */
#include "codec.h"
#include "fuzz_checks.h"

FUZZ_DECODE_REENCODE_HARNESS(mc_attempt, mc_decode_attempt, mc_encode_attempt)
