// Inline `async fn` stages, before and after `Validate`, tagged where needed.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;
    use wymcp::{Exchange, Flow};

    #[wire_check]
    pub async fn check(ex: &mut Exchange<'_>) -> Flow {
        let _ = ex.headers().len();
        Flow::Continue
    }

    #[body_bound(reason = "reads the body to see how long it is")]
    async fn measure(ex: &mut Exchange<'_>) -> Flow {
        let _ = ex.bytes().len();
        Flow::Continue
    }

    pub type Validate = stages::Validate;

    pub async fn answer(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Answer(wymcp::Response::new(wymcp::axum::body::Body::empty()))
    }
}

fn main() {
    let names: Vec<&str> = post::CHAIN.iter().map(|s| s.name).collect();
    assert_eq!(names, ["check", "measure", "Validate", "answer"]);
}
