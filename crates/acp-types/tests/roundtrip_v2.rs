//! Property (feature `unstable-protocol-v2`): every generated v2 type encodes to JSON and
//! decodes back to an equal value, patches included (absent, `null` and a value each come back
//! as they were). The strategies are generated with the types.
#![cfg(feature = "unstable-protocol-v2")]

// The generated types, named bare by `for_each_type!` (the envelope types live in `rpc`).
use acp_types::v2::{rpc::*, *};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

#[cfg(not(feature = "unstable"))]
#[path = "generated/v2_strategies.rs"]
mod strategies;
#[cfg(feature = "unstable")]
#[path = "generated/v2_unstable_strategies.rs"]
mod strategies;

#[path = "common/support.rs"]
mod support;

#[test]
fn every_generated_v2_type_round_trips_through_json() {
    let mut checked = 0;
    macro_rules! check {
        ($ty:ident, $arb:ident) => {
            let mut runner = TestRunner::new(Config {
                cases: 32,
                failure_persistence: None,
                ..Config::default()
            });
            let result = runner.run(&strategies::$arb(), |value: $ty| {
                let json = serde_json::to_string(&value).expect("every value encodes");
                let back: $ty = serde_json::from_str(&json)
                    .map_err(|e| TestCaseError::fail(format!("{json} does not decode: {e}")))?;
                prop_assert_eq!(&back, &value, "through {}", json);
                Ok(())
            });
            if let Err(error) = result {
                panic!("{}: {error}", stringify!($ty));
            }
            checked += 1;
        };
    }
    for_each_type!(check);
    assert!(checked > 150, "only {checked} types checked");
}
