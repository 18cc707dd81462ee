// The smallest chain: `Validate`, then a stage that answers.
use wymcp::{Exchange, Flow, Stage};

pub struct Answer;

impl Stage for Answer {
    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Answer(wymcp::Response::new(wymcp::axum::body::Body::empty()))
    }
}

#[wymcp::pipeline]
mod post {
    pub type Validate = wymcp::stages::Validate;
    pub type Answer = super::Answer;
}

fn main() {
    assert_eq!(post::CHAIN.len(), 2);
    let server = wymcp::Server::builder().build().expect("the default server builds");
    let _router: wymcp::axum::Router = post::router(server);
}
