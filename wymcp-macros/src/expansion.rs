//! Snapshots of what `#[pipeline]` expands to, pretty-printed, so a reviewer
//! can read the generated `handle` and check the order of the calls.
//!
//! Beside the macro: a unit test of the crate calls `expand::pipeline` on
//! `proc_macro2` tokens, the very function the `proc_macro` entry in
//! `lib.rs` calls, and unparses what it returns with `prettyplease`. Stable
//! toolchain, no cargo-expand. The snapshots are `snapshots/*.snap` beside
//! this file: a change shows as a `.snap.new` to read before accepting it.

use proc_macro2::TokenStream;
use quote::quote;

use crate::expand;

/// The module as written, then what `#[pipeline]` makes of it.
fn expand(module: TokenStream) -> String {
    let unparse = |tokens: TokenStream| {
        let file = syn::parse2(tokens).expect("a valid file");
        prettyplease::unparse(&file)
    };
    let input = unparse(module.clone());
    let output = unparse(expand::pipeline(TokenStream::new(), module));
    format!("// #[wymcp::pipeline]\n{input}\n// expands to:\n\n{output}")
}

macro_rules! assert_expansion {
    ($module:expr) => {
        insta::with_settings!({ omit_expression => true }, {
            insta::assert_snapshot!(expand($module));
        })
    };
}

#[test]
fn a_minimal_chain() {
    assert_expansion!(quote! {
        pub mod post {
            use wymcp::stages;

            #[wire_check]
            pub type OriginCheck = stages::OriginCheck;
            pub type Validate = stages::Validate;
            pub type Dispatch = stages::Dispatch;
        }
    });
}

#[test]
fn a_chain_with_inline_fn_stages() {
    assert_expansion!(quote! {
        pub mod post {
            use wymcp::stages;
    use wymcp::{Exchange, Flow};

            #[wire_check]
            pub type OriginCheck = stages::OriginCheck;

            /// The parse step.
            #[body_bound(reason = "the parse step is what reads the body")]
            pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
                stages::parse_body(ex).await
            }

            pub type Validate = stages::Validate;

            async fn audit(ex: &mut Exchange<'_>) -> Flow {
                Flow::Continue
            }

            pub type Dispatch = stages::Dispatch;
        }
    });
}

/// With `Validate` imported under another name, the spelling finds no
/// `Validate`: the order and the roles are left to const expressions over
/// `is_validate`.
#[test]
fn a_chain_with_validate_under_another_name() {
    assert_expansion!(quote! {
        mod post {
            use wymcp::stages::Validate as Schema;

            #[wire_check]
            pub type OriginCheck = wymcp::stages::OriginCheck;
            pub type Check = Schema;
            pub type Dispatch = wymcp::stages::Dispatch;
        }
    });
}

/// On error: the module with its tags stripped, stubs, and the errors.
#[test]
fn a_chain_with_errors_expands_to_stubs_and_errors() {
    assert_expansion!(quote! {
        mod post {
            pub type Classify = wymcp::stages::Classify;
            pub type Validate = wymcp::stages::Validate;
            #[wire_check]
            pub type Auth = wymcp::stages::Auth;
        }
    });
}
