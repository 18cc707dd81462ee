//! The test command replays the fuzz corpus: every file of
//! `fuzz/corpus/<target>/` goes through the invariant check its fuzz target
//! runs (`wymcp_tests::fuzz`), in a plain `cargo test`, without a fuzzing
//! engine. A crash the fuzzer found, minimised and added to the corpus,
//! stays fixed here.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use wymcp_tests::fuzz::{Check, TARGETS};

fn replay(target: &str) {
    let check: Check = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, check)| *check)
        .unwrap();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "the corpus of `{target}` has {} files; is {} the corpus?",
        files.len(),
        dir.display()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let data = std::fs::read(path).unwrap();
            check(&data)
                .err()
                .map(|error| format!("{}: {error}", path.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} corpus files of `{target}` break an invariant:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn chain_corpus_keeps_the_chain_invariants() {
    replay("chain");
}

#[test]
fn dispatch_corpus_keeps_the_chain_invariants() {
    replay("dispatch");
}

#[test]
fn classify_corpus_agrees_with_the_reference() {
    replay("classify");
}

#[test]
fn header_value_corpus_keeps_strict_base64_and_round_trips() {
    replay("header_value");
}

#[test]
fn request_state_corpus_never_unseals_a_forgery() {
    replay("request_state");
}

#[test]
fn every_target_has_a_corpus_test() {
    let names: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names,
        [
            "chain",
            "dispatch",
            "classify",
            "header_value",
            "request_state"
        ]
    );
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| {
            let data = std::fs::read(&path).unwrap();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                data,
            )
        })
        .collect();
    files.sort();
    files
}

/// The seed corpus is a starting point worth having: between them, its
/// `chain` and `dispatch` inputs reach every stage that answers, every status
/// of the chain's table and a result, so a campaign starts from every arm.
#[test]
fn the_seed_corpus_reaches_every_stage_and_status() {
    use wymcp_tests::fuzz::chain::{STATUSES, chain_outcome, dispatch_outcome};
    let mut outcomes: Vec<(String, _)> = corpus("chain")
        .into_iter()
        .map(|(name, data)| (name, chain_outcome(&data)))
        .collect();
    outcomes.extend(
        corpus("dispatch")
            .into_iter()
            .map(|(name, data)| (format!("dispatch/{name}"), dispatch_outcome(&data))),
    );
    if std::env::var_os("WYMCP_FUZZ_OUTCOMES").is_some() {
        for (name, outcome) in &outcomes {
            eprintln!("{name:40} {outcome:?}");
        }
    }
    for stage in wymcp::chain::post::CHAIN {
        if matches!(stage.name, "Classify") {
            continue; // answers nothing
        }
        assert!(
            outcomes
                .iter()
                .any(|(_, o)| o.stage.as_deref() == Some(stage.name)),
            "no corpus input is rejected by `{}`",
            stage.name
        );
    }
    for status in STATUSES {
        assert!(
            outcomes.iter().any(|(_, o)| o.status == status),
            "no corpus input is answered {status}"
        );
    }
    assert!(
        outcomes
            .iter()
            .any(|(_, o)| o.status == 200 && o.stage.is_none()),
        "no corpus input gets a result"
    );
}
