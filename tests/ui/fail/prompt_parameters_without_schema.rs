// A prompt's arguments need JSON schemas too: one error for each parameter
// whose type has none, at its type, naming it and the derive to add.
use wymcp::PromptResult;

#[derive(serde::Deserialize)]
struct Tone {
    name: String,
}

#[derive(serde::Deserialize)]
struct Length(u32);

struct Notes;

#[wymcp::handlers]
impl Notes {
    #[prompt]
    async fn summarize(&self, tone: Tone, topic: String, length: Option<Length>) -> PromptResult {
        let _ = (tone.name, topic, length.map(|l| l.0));
        PromptResult::new()
    }

    #[prompt]
    async fn greet(&self, tone: Tone) -> PromptResult {
        let _ = tone.name;
        PromptResult::new()
    }
}

fn main() {
    let _ = Notes::handlers();
}
