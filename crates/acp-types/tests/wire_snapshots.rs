//! Pins the wire form of one representative value of every generated type, so that a change to
//! the generator or the schema shows up as a reviewable snapshot diff.

// The generated types, named bare by `for_each_type!` (the envelope types live in `rpc`).
use acp_types::{rpc::*, *};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::fmt::Write;

#[cfg(not(feature = "unstable"))]
#[path = "generated/stable_strategies.rs"]
mod strategies;
#[cfg(feature = "unstable")]
#[path = "generated/unstable_strategies.rs"]
mod strategies;
#[path = "common/support.rs"]
mod support;

/// A deterministic runner of its own for the type `name`, seeded by the name: the same values
/// on every run and machine, and a type's sample depends only on its name and its strategy (so
/// on the schema of the type and of the types it contains). With one runner shared by all
/// types, a type added or changed early shifted the samples of every later type, and a schema
/// update's snapshot diff was mostly noise (issue 28).
fn runner_for(name: &str) -> TestRunner {
    // FNV-1a, which is fixed (std's hashers are not guaranteed across releases), spread over
    // the 32 bytes of a ChaCha seed.
    let mut seed = [0u8; 32];
    for (round, chunk) in seed.chunks_mut(8).enumerate() {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ round as u64;
        for byte in name.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        chunk.copy_from_slice(&hash.to_le_bytes());
    }
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
    )
}

#[test]
fn wire_form_of_every_type() {
    let mut out = String::new();
    macro_rules! show {
        ($ty:ident, $arb:ident) => {
            let mut runner = runner_for(stringify!($ty));
            let value = strategies::$arb().new_tree(&mut runner).unwrap().current();
            let json = serde_json::to_string(&value).unwrap();
            let back: $ty = serde_json::from_str(&json).unwrap();
            assert_eq!(back, value);
            writeln!(out, "{}: {json}", stringify!($ty)).unwrap();
        };
    }
    for_each_type!(show);
    let name = if cfg!(feature = "unstable") {
        "unstable_types"
    } else {
        "stable_types"
    };
    insta::assert_snapshot!(name, out);
}
