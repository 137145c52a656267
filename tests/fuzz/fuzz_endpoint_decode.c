/* libFuzzer harness for mc_decode_endpoint, read by every executor and gateway
 * from the endpoints topic, which anyone with write access to it can fill.
 * Beyond "no crash" it checks that every error explains itself, that memory
 * stays proportional to the input, and that a decoded group or limit
 * re-encodes stably. */
#include "codec.h"
#include "fuzz_checks.h"

FUZZ_DECODE_REENCODE_HARNESS(mc_endpoint, mc_decode_endpoint, mc_encode_endpoint)
