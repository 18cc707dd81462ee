//! A minimal tracing subscriber that records the rejection events
//! (`wymcp::rejection`) of the request being run on this thread, so a check
//! can tell which stage answered and that each rejection was recorded once.

use std::cell::RefCell;

use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber, span};

/// One rejection event: the stage that answered, the status and the code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RejectionEvent {
    /// The stage's name, as declared in the chain.
    pub stage: String,
    /// The HTTP status.
    pub status: u64,
    /// The JSON-RPC code.
    pub code: i64,
}

thread_local! {
    static EVENTS: RefCell<Vec<RejectionEvent>> = const { RefCell::new(Vec::new()) };
    static DISPATCH: tracing::Dispatch = tracing::Dispatch::new(Capture);
}

/// Runs `f` with rejection events recorded; returns its value and the events.
pub fn record<T>(f: impl FnOnce() -> T) -> (T, Vec<RejectionEvent>) {
    EVENTS.with(|events| events.borrow_mut().clear());
    let value = DISPATCH.with(|dispatch| tracing::dispatcher::with_default(dispatch, f));
    let events = EVENTS.with(|events| std::mem::take(&mut *events.borrow_mut()));
    (value, events)
}

struct Capture;

const TARGET: &str = "wymcp::rejection";

impl Subscriber for Capture {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if self.enabled(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event() && metadata.target() == TARGET
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut visitor = Fields::default();
        event.record(&mut visitor);
        EVENTS.with(|events| events.borrow_mut().push(visitor.0));
    }

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}

#[derive(Default)]
struct Fields(RejectionEvent);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "stage" {
            value.clone_into(&mut self.0.stage);
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "status" => self.0.status = value,
            "code" => self.0.code = i64::try_from(value).unwrap_or(i64::MAX),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        match field.name() {
            "status" => self.0.status = u64::try_from(value).unwrap_or(0),
            "code" => self.0.code = value,
            _ => {}
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}
