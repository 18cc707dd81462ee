//! The extension's methods: `tasks/get` (the detailed task, failing one
//! whose lease ran out), `tasks/update` (the answers to its input
//! requests), `tasks/cancel`; each addressed by a `taskId` of this server's
//! shape and answered only to the principal that created the task.

use std::sync::Arc;

use serde_json::{Value, json};

use super::admission::{Tasks, declared, minted, undeclared};
use super::record::{Status, detailed};
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::ids::now_ms;
use crate::surface::call::{Answer, Call, Env, Outcome, Running};
use crate::surface::finish::Finishing;

/// What every task method checks first: the extension declared, then a
/// `taskId` this server could have minted; the id.
fn addressed(call: &Call<'_>, method: &str) -> Result<String, RpcError> {
    if !declared(call.params.as_ref()) {
        return Err(undeclared(method));
    }
    task_id(call.params.as_ref()).map(str::to_owned)
}

/// The task's id of a task method's params, when it is one this server
/// could have minted (32 lowercase hex digits); any other is unknown.
fn task_id(params: Option<&Value>) -> Result<&str, RpcError> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Value::String(id)) if minted(id) => Ok(id),
        Some(Value::String(_)) => Err(unknown()),
        _ => Err(RpcError::invalid_params("`taskId` must be a string")),
    }
}

/// The one answer for a task that is not there for this caller: never
/// created, expired, or another principal's.
fn unknown() -> RpcError {
    RpcError::invalid_params("unknown task")
}

impl Tasks {
    /// `tasks/get`: the detailed task.
    pub(crate) fn get(self: &Arc<Self>, call: &Call<'_>, finishing: &Arc<Finishing>) -> Answer {
        let id = match addressed(call, "tasks/get") {
            Ok(id) => id,
            Err(error) => return error.into(),
        };
        let caller = call.subject().to_owned();
        let reply = call.reply(finishing);
        let tasks = Arc::clone(self);
        Answer::Running(Running::future(async move {
            let read = tasks
                .modify(&id, Some(&caller), |record| {
                    // A working task whose runner stopped renewing: failed.
                    if record.status == Status::Working && record.lease < now_ms() {
                        record.fail(
                            &RpcError::new(
                                ErrorCode::INTERNAL_ERROR,
                                "the replica running this task stopped (its lease ran out)",
                            ),
                            now_ms(),
                        );
                        return true;
                    }
                    false
                })
                .await;
            match read {
                Ok(Some(record)) => {
                    Outcome::Result(reply.finished(detailed(&id, &record, &tasks.limits), false))
                }
                Ok(None) => Outcome::Error(unknown()),
                Err(error) => Outcome::Error(error),
            }
        }))
    }

    /// `tasks/update`: answers to the task's pending input requests; once
    /// none is pending, its handler's next round runs here.
    pub(crate) fn update(self: &Arc<Self>, call: &Call<'_>, env: Env<'_>) -> Answer {
        let id = match addressed(call, "tasks/update") {
            Ok(id) => id,
            Err(error) => return error.into(),
        };
        let responses = match call.params.as_ref().and_then(|p| p.get("inputResponses")) {
            Some(Value::Object(responses)) => responses.clone(),
            _ => return RpcError::invalid_params("`inputResponses` must be an object").into(),
        };
        let caller = call.subject().to_owned();
        // Counted per caller as the listen limits are: the principal, else
        // the client's address (the subject is `""` for every anonymous one).
        let mut slot = match self.admit(call.caller()) {
            Ok(slot) => slot,
            Err(refusal) => return self.busy(refusal),
        };
        let reply = call.reply(env.finishing);
        let shared = Arc::clone(env.shared);
        let tasks = Arc::clone(self);
        Answer::Running(Running::future(async move {
            let mut resumed = false;
            let lease = tasks.lease_ms();
            let written = tasks
                .modify(&id, Some(&caller), |record| {
                    resumed = false;
                    if record.status != Status::InputRequired {
                        return false;
                    }
                    let mut changed = false;
                    for (key, response) in &responses {
                        // Answers to requests not pending are ignored.
                        if record.pending.remove(key).is_some() {
                            record.answered.insert(key.clone(), response.clone());
                            changed = true;
                        }
                    }
                    if record.pending.is_empty() {
                        let now = now_ms();
                        record.settle(Status::Working, now);
                        record.lease = now + lease;
                        record.runner.clone_from(&tasks.replica);
                        resumed = true;
                        changed = true;
                    }
                    changed
                })
                .await;
            match written {
                Ok(Some(record)) => {
                    if resumed {
                        slot.id = Some(id.clone());
                        tasks.resume(id, slot, &record, shared);
                    }
                    Outcome::Result(reply.finished(json!({}), false))
                }
                Ok(None) => Outcome::Error(unknown()),
                Err(error) => Outcome::Error(error),
            }
        }))
    }

    /// `tasks/cancel`: the task settles `cancelled`; its handler, here or
    /// on the replica running it (at its next heartbeat), is dropped.
    pub(crate) fn cancel(self: &Arc<Self>, call: &Call<'_>, finishing: &Arc<Finishing>) -> Answer {
        let id = match addressed(call, "tasks/cancel") {
            Ok(id) => id,
            Err(error) => return error.into(),
        };
        let caller = call.subject().to_owned();
        let reply = call.reply(finishing);
        let tasks = Arc::clone(self);
        Answer::Running(Running::future(async move {
            let written = tasks
                .modify(&id, Some(&caller), |record| {
                    if record.status.terminal() {
                        return false;
                    }
                    record.settle(Status::Cancelled, now_ms());
                    record.answered.clear();
                    record.arguments = Value::Null;
                    true
                })
                .await;
            match written {
                Ok(Some(_)) => {
                    let abort = tasks.local().aborts.remove(&id);
                    if let Some(abort) = abort {
                        abort.abort();
                    }
                    Outcome::Result(reply.finished(json!({}), false))
                }
                Ok(None) => Outcome::Error(unknown()),
                Err(error) => Outcome::Error(error),
            }
        }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::admission::new_id;
    use super::*;

    /// Rule: ids are 128 random bits; only an id of that shape reaches the
    /// store, any other is the same "unknown task".
    #[test]
    fn ids_are_random_and_only_minted_shapes_are_looked_up() {
        let a = new_id().unwrap();
        let b = new_id().unwrap();
        assert!(minted(&a) && minted(&b) && a != b);
        for bad in [json!({"taskId": "x"}), json!({"taskId": a.to_uppercase()})] {
            assert_eq!(task_id(Some(&bad)).unwrap_err(), unknown());
        }
        assert_eq!(
            task_id(Some(&json!({"taskId": 5}))).unwrap_err().code,
            ErrorCode::INVALID_PARAMS
        );
        assert_eq!(task_id(Some(&json!({"taskId": a}))).unwrap(), a);
    }
}
