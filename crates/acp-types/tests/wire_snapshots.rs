//! Pins the wire form of one representative value of every generated type, so that a change to
//! the generator or the schema shows up as a reviewable snapshot diff.

// The generated types, named bare by `for_each_type!` (the envelope types live in `rpc`).
use acp_types::{rpc::*, *};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use std::fmt::Write;

#[cfg(not(feature = "unstable"))]
#[path = "generated/stable_strategies.rs"]
mod strategies;
#[cfg(feature = "unstable")]
#[path = "generated/unstable_strategies.rs"]
mod strategies;
#[path = "common/support.rs"]
mod support;

#[test]
fn wire_form_of_every_type() {
    // A deterministic runner: the same values on every run and machine.
    let mut runner = TestRunner::deterministic();
    let mut out = String::new();
    macro_rules! show {
        ($ty:ident, $arb:ident) => {
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
