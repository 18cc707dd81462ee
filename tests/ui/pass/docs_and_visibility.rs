//! Doc comments, other attributes and any visibility on stages pass through.
#![deny(missing_docs)]

/// The chain, documented.
#[wymcp::pipeline]
pub(crate) mod post {
    //! Inner attributes of the module stay inside it.
    #![allow(clippy::module_inception)]

    use wymcp::stages;

    /// Checks the origin.
    #[wire_check]
    #[allow(dead_code)]
    pub(crate) type OriginCheck = stages::OriginCheck;

    /// Reads the body.
    #[body_bound(reason = "the parse step is what reads the body")]
    pub(super) async fn parse_body(ex: &mut wymcp::Exchange<'_>) -> wymcp::Flow {
        stages::parse_body(ex).await
    }

    #[doc = "Validates."]
    type Validate = stages::Validate;

    /// Dispatches.
    pub type Dispatch = stages::Dispatch;
}

fn main() {
    assert_eq!(post::CHAIN.len(), 4);
}
