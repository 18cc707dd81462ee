// The rules of `#[complete]` in a `#[handlers]` impl, every mistake
// reported at once: the prompt or template is one of the impl's, the
// argument one of its arguments or variables; the keys; the parameters.
use wymcp::{Completions, PromptResult};

struct Notes;

#[wymcp::tools]
impl Notes {
    #[resource_template("notes://{id}")]
    async fn note(&self, id: u64) -> Option<String> {
        Some(format!("{id}"))
    }

    #[prompt]
    async fn summarize(&self, id: u64) -> PromptResult {
        PromptResult::new().user(format!("{id}"))
    }

    #[complete(prompt = "summarise", argument = "id")]
    async fn misspelt_prompt(&self, value: String) -> Completions {
        Completions::new([value])
    }

    #[complete(prompt = "summarize", argument = "words")]
    async fn no_such_argument(&self, value: String) -> Completions {
        Completions::new([value])
    }

    #[complete(template = "notes://{ID}", argument = "id")]
    async fn no_such_template(&self, value: String) -> Completions {
        Completions::new([value])
    }

    #[complete(template = "notes://{id}", argument = "key")]
    async fn no_such_variable(&self, value: String) -> Completions {
        Completions::new([value])
    }

    #[complete(argument = "id")]
    async fn no_target(&self, value: String) -> Completions {
        Completions::new([value])
    }

    #[complete(prompt = "summarize", argument = "id")]
    async fn odd_parameter(&self, typed: String) -> Completions {
        Completions::new([typed])
    }
}

fn main() {}
