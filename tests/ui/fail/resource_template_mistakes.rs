// The rules of `#[resource_template]` in a `#[tools]` impl, every mistake
// reported at once: each parameter names a variable of the template, each
// variable is a parameter; a template without a variable is one resource.
struct Notes;

#[wymcp::tools]
impl Notes {
    #[resource_template("notes://{id}/{part}")]
    async fn note(&self, id: u64, page: u32) -> String {
        format!("{id} {page}")
    }

    #[resource_template("notes://all")]
    async fn all(&self) -> String {
        String::new()
    }
}

fn main() {
    let _ = Notes::resource_templates();
}
