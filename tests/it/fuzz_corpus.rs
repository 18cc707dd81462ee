//! The test command replays the fuzz corpus: every file of
//! `fuzz/corpus/<target>/` goes through the invariant check its fuzz target
//! runs (`wymcp_tests::fuzz`), in a plain `cargo test`, without a fuzzing
//! engine. A crash the fuzzer found, minimised and added to the corpus,
//! stays fixed here.

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
fn stdio_lines_corpus_splits_as_the_reference_whatever_the_reads() {
    replay("stdio_lines");
}

#[test]
fn jwk_set_corpus_keeps_only_usable_keys_of_a_keys_array() {
    replay("jwk_set");
}

#[test]
fn jwt_corpus_verifies_nothing_the_key_did_not_sign() {
    replay("jwt");
}

#[test]
fn introspection_corpus_accepts_only_active_true_and_well_typed_claims() {
    replay("introspection");
}

#[test]
fn session_token_corpus_opens_only_what_the_server_minted() {
    replay("session_token");
}

#[test]
fn sealed_id_corpus_opens_only_for_the_caller_it_was_sent_to() {
    replay("sealed_id");
}

/// The checks of an accepted token or answer run only on inputs that are
/// accepted: the seeds named for acceptance are, and those named for a
/// refusal are not.
#[test]
fn the_auth_seeds_reach_acceptance_and_refusal() {
    use wymcp_tests::fuzz::{introspection, jwt};
    let accepted = |target: &str, accepts: fn(&[u8]) -> bool| -> Vec<String> {
        corpus(target)
            .into_iter()
            .filter(|(_, data)| accepts(data))
            .map(|(name, _)| name)
            .collect()
    };
    assert_eq!(
        accepted("jwt", jwt::accepts),
        ["payload-valid", "token-valid"]
    );
    assert_eq!(
        accepted("introspection", introspection::accepts),
        ["active-valid", "scope-number-scp-azp"]
    );
}

/// The 2025 token seeds reach every arm: capabilities that are given a
/// token and some that are not, and tokens sealed under the fuzz key that
/// verify but are past their time (so a campaign starts from genuine
/// tokens, and the replay shows their refusal is for their age alone).
#[test]
fn the_legacy_token_seeds_reach_minting_and_expiry() {
    use wymcp_tests::fuzz::{sealed_id, session_token};
    let minted: Vec<String> = corpus("session_token")
        .into_iter()
        .filter(|(_, data)| session_token::mints(data))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        minted,
        [
            "capability-bits-all",
            "declaration-padded-with-values",
            "declares-everything",
            "elicitation-form-only",
            // Not JSON: byte 0's bits declare.
            "expired-token-alice",
            "expired-token-anonymous",
            "id-length-past-the-end",
            "modes-not-objects",
            "not-base64url",
            "version-1-token"
        ]
    );
    let expired: Vec<String> = corpus("session_token")
        .into_iter()
        .filter(|(_, data)| session_token::is_expired_token(data))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(expired, ["expired-token-alice", "expired-token-anonymous"]);
    let refusals: Vec<(String, String)> = corpus("sealed_id")
        .into_iter()
        .map(|(name, data)| (name, sealed_id::refusal(&data)))
        .filter(|(_, reason)| reason != "unknown_id")
        .collect();
    assert_eq!(
        refusals,
        [
            ("expired-id".to_owned(), "late".to_owned()),
            ("expired-id-in-a-response".to_owned(), "late".to_owned())
        ]
    );
}

/// The Redis seeds reach both arms: the ones named for a message or
/// record the shared key signed are accepted as read, every other is not.
#[test]
fn the_redis_seeds_reach_acceptance_and_refusal() {
    use wymcp_tests::fuzz::{bus_message, task_record};
    let accepted = |target: &str, accepts: fn(&[u8]) -> bool| -> Vec<String> {
        corpus(target)
            .into_iter()
            .filter(|(_, data)| accepts(data))
            .map(|(name, _)| name)
            .collect()
    };
    assert_eq!(
        accepted("bus_message", bus_message::accepts),
        [
            "signed-app",
            "signed-junk",
            "signed-own",
            "signed-resync",
            "signed-tools",
            "signed-updated"
        ]
    );
    assert_eq!(
        accepted("task_record", task_record::accepts),
        ["sealed-empty-id", "sealed-t1-v3"]
    );
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
            "request_state",
            "stdio_lines",
            "jwk_set",
            "jwt",
            "introspection",
            "session_token",
            "sealed_id",
            "bus_message",
            "task_record"
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
    if let Some(one) = std::env::var_os("WYMCP_FUZZ_ONE") {
        let data = std::fs::read(one).unwrap();
        eprintln!("chain: {:?}", chain_outcome(&data));
        eprintln!("dispatch: {:?}", dispatch_outcome(&data));
    }
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

/// Replays any directory through a target's check and prints how the chain
/// answered, by stage, status and code: for reading what a campaign's corpus
/// reaches. `WYMCP_FUZZ_REPLAY=chain:fuzz/campaign/chain cargo test -p
/// wymcp-tests --test it fuzz_corpus::replay_a_directory -- --ignored
/// --nocapture`
#[test]
#[ignore = "reads a directory named by WYMCP_FUZZ_REPLAY"]
fn replay_a_directory() {
    use std::collections::BTreeMap;
    use wymcp_tests::fuzz::chain::{chain_outcome, dispatch_outcome};
    let spec = std::env::var("WYMCP_FUZZ_REPLAY").unwrap();
    let (target, dir) = spec.split_once(':').unwrap();
    let check = TARGETS.iter().find(|(n, _)| *n == target).unwrap().1;
    let mut counts: BTreeMap<String, (usize, Vec<PathBuf>)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut files = 0;
    // Relative to the workspace root, where the command is typed.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        files += 1;
        if let Err(error) = check(&data) {
            failures.push(format!("{}: {error}", path.display()));
        }
        let outcome = match target {
            "chain" => Some(chain_outcome(&data)),
            "dispatch" => Some(dispatch_outcome(&data)),
            _ => None,
        };
        if let Some(o) = outcome {
            let key = format!(
                "{} {} {}",
                o.status,
                o.stage.unwrap_or_default(),
                o.code.map_or(String::new(), |c| c.to_string())
            );
            let (n, examples) = counts.entry(key).or_default();
            *n += 1;
            if examples.len() < 3 {
                examples.push(path.clone());
            }
        }
    }
    for (key, (n, examples)) in &counts {
        eprintln!("{n:6}  {key:32} e.g. {examples:?}");
    }
    eprintln!("{files} files, {} failures", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bus_message_corpus_accepts_only_the_shared_keys_messages() {
    replay("bus_message");
}

#[test]
fn task_record_corpus_opens_only_the_shared_keys_records() {
    replay("task_record");
}
