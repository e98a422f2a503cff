//! Arbitrary bytes through the line reader and the message decoder. The
//! checks live in the crate (`acp_jsonrpc::fuzzing::line_reader`), where a
//! unit test runs them on a handful of nasty inputs in every CI run.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acp_jsonrpc::fuzzing::line_reader(data);
});
