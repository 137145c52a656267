/* libFuzzer harness for mc_decode_result, read by the jobs role (the
 * outcome of a job's occurrences) and by mooncakectl from a topic anyone with
 * access can write, in either version of the schema. Beyond "no crash" it
 * checks that every error explains itself, that memory stays proportional to
 * the input, and that a decoded result re-encodes stably. */
#include "codec.h"
#include "fuzz_checks.h"

FUZZ_DECODE_REENCODE_HARNESS(mc_result, mc_decode_result, mc_encode_result)
