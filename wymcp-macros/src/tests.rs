//! Unit tests of the checking passes (`ast`, `attr`, `check`), independent of
//! the tokens `expand` writes: each feeds a syn-parsed module and reads the
//! errors the passes record, and where the chain is valid, what they found.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::{Form, Pipeline};
use crate::attr::Tag;
use crate::check;
use crate::ctxt::Ctxt;

/// Runs the passes: the parsed pipeline (if it has a body), where `Validate`
/// was believed to be, and every error message in order.
fn run(module: TokenStream) -> (Option<Pipeline>, Option<usize>, Vec<String>) {
    let module = syn::parse2(module).expect("the test module parses");
    let cx = Ctxt::new();
    let pipeline = Pipeline::from_syn(&cx, module);
    let validate = pipeline.as_ref().and_then(|p| check::check(&cx, p));
    let errors = match cx.check() {
        Ok(()) => Vec::new(),
        Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
    };
    (pipeline, validate, errors)
}

fn errors(module: TokenStream) -> Vec<String> {
    run(module).2
}

#[track_caller]
fn assert_one_error(module: TokenStream, fragment: &str) {
    let errors = errors(module);
    assert_eq!(errors.len(), 1, "expected one error, got {errors:#?}");
    assert!(
        errors[0].contains(fragment),
        "{:?} does not mention {fragment:?}",
        errors[0]
    );
}

#[test]
fn a_valid_chain_has_no_error_and_keeps_its_stages_in_order() {
    let (pipeline, validate, errors) = run(quote! {
        mod post {
            use wymcp::stages;
            const HELPER: u8 = 1;
            #[wire_check] pub type OriginCheck = stages::OriginCheck;
            #[body_bound(reason = "reads it")]
            pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow { todo!() }
            pub type Validate = stages::Validate;
            pub type Dispatch = stages::Dispatch;
        }
    });
    assert_eq!(errors, Vec::<String>::new());
    let pipeline = pipeline.expect("a body");
    let names: Vec<String> = pipeline
        .stages
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    assert_eq!(names, ["OriginCheck", "parse_body", "Validate", "Dispatch"]);
    assert_eq!(validate, Some(2));
    assert!(matches!(
        pipeline.stages[0].tag,
        Some(Tag::WireCheck { .. })
    ));
    assert!(matches!(pipeline.stages[1].form, Form::Fn));
    let Some(Tag::BodyBound {
        reason: Some(reason),
        ..
    }) = &pipeline.stages[1].tag
    else {
        panic!("parse_body is body-bound with a reason");
    };
    assert_eq!(reason.value(), "reads it");
    // Helpers are kept, tags are stripped from every item.
    assert_eq!(pipeline.items.len(), 6);
    let text = pipeline
        .items
        .iter()
        .map(|i| quote!(#i).to_string())
        .collect::<String>();
    assert!(
        !text.contains("wire_check") && !text.contains("body_bound"),
        "{text}"
    );
}

#[test]
fn validate_is_believed_by_its_name_or_by_the_path_it_aliases() {
    let (_, validate, errors) = run(quote! {
        mod post { pub type Schema = wymcp::stages::Validate; pub type After = X; }
    });
    assert_eq!((validate, errors), (Some(0), vec![]));
    let (_, validate, errors) = run(quote! {
        mod post { #[wire_check] pub type A = X; pub type Validate = Mine; }
    });
    assert_eq!((validate, errors), (Some(1), vec![]));
}

#[test]
fn an_inline_fn_is_never_believed_to_be_validate() {
    let (_, validate, _) = run(quote! {
        mod post { async fn Validate(ex: &mut Exchange<'_>) -> Flow { todo!() } }
    });
    assert_eq!(validate, None);
}

#[test]
fn no_validate_by_spelling_leaves_the_order_to_the_type_system() {
    // An aliased `Validate` may be anywhere: nothing is reported here.
    let (_, validate, errors) = run(quote! {
        mod post { use wymcp::stages::Validate as V; pub type Check = V; #[wire_check] pub type Late = X; }
    });
    assert_eq!((validate, errors), (None, vec![]));
}

#[test]
fn rule_1_a_wire_check_after_validate() {
    assert_one_error(
        quote! { mod post { pub type Validate = V; #[wire_check] pub type Auth = A; } },
        "`#[wire_check]` stage `Auth` runs after `Validate`",
    );
}

#[test]
fn rule_2_an_untagged_stage_before_validate() {
    assert_one_error(
        quote! { mod post { pub type Classify = C; pub type Validate = V; } },
        "stage `Classify` runs before `Validate` but is not declared",
    );
    assert_one_error(
        quote! { mod post { async fn parse(ex: &mut Exchange<'_>) -> Flow { todo!() } pub type Validate = V; } },
        "stage `parse` runs before `Validate`",
    );
}

#[test]
fn rule_3_two_validates() {
    assert_one_error(
        quote! { mod post { pub type Validate = V; pub type Again = wymcp::stages::Validate; } },
        "a second `Validate`: stage `Again`",
    );
}

#[test]
fn rule_4_body_bound_needs_a_non_empty_reason() {
    for tag in [
        quote!(#[body_bound]),
        quote!(#[body_bound()]),
        quote!(#[body_bound = "x"]),
    ] {
        assert_one_error(
            quote! { mod post { #tag pub type C = C; pub type Validate = V; } },
            "`#[body_bound]` needs the reason",
        );
    }
    assert_one_error(
        quote! { mod post { #[body_bound(reason = " ")] pub type C = C; pub type Validate = V; } },
        "empty `reason`",
    );
    assert_one_error(
        quote! { mod post { #[body_bound(reason = 3)] pub type C = C; pub type Validate = V; } },
        "is a string literal",
    );
}

#[test]
fn rule_4_unknown_keys_are_refused_and_the_known_one_still_read() {
    let (pipeline, _, errors) = run(quote! {
        mod post {
            #[body_bound(reason = "r", because = "x", strict)]
            pub type C = C;
            pub type Validate = V;
        }
    });
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].contains("unknown key `because`"), "{errors:#?}");
    assert!(errors[1].contains("unknown key `strict`"), "{errors:#?}");
    let stage = &pipeline.expect("a body").stages[0];
    assert!(matches!(&stage.tag, Some(Tag::BodyBound { reason: Some(r), .. }) if r.value() == "r"));
}

#[test]
fn rule_4_both_tags_and_a_repeated_tag() {
    assert_one_error(
        quote! { mod post { #[wire_check] #[body_bound(reason = "r")] pub type C = C; pub type Validate = V; } },
        "either a wire check or body-bound, not both",
    );
    assert_one_error(
        quote! { mod post { #[wire_check] #[wymcp::wire_check] pub type C = C; pub type Validate = V; } },
        "`#[wire_check]` is repeated",
    );
    assert_one_error(
        quote! { mod post { #[wire_check(strict)] pub type C = C; pub type Validate = V; } },
        "`#[wire_check]` takes no arguments",
    );
}

#[test]
fn rule_4_a_tag_on_a_helper_item() {
    for (item, what) in [
        (
            quote!(
                const C: u8 = 1;
            ),
            "a `const`",
        ),
        (
            quote!(
                use x::y;
            ),
            "a `use` declaration",
        ),
        (
            quote!(
                fn f() {}
            ),
            "a plain (not `async`) `fn`",
        ),
        (
            quote!(
                struct S;
            ),
            "a `struct`",
        ),
        (quote!(impl S {}), "an `impl` block"),
    ] {
        assert_one_error(
            quote! { mod post { #[wire_check] #item pub type Validate = V; } },
            &format!("`#[wire_check]` tags a stage, and {what} is not one"),
        );
    }
}

#[test]
fn rule_5_no_body_and_cfg_on_a_stage() {
    let (pipeline, _, found) = run(quote! { mod post; });
    assert!(pipeline.is_none());
    assert_eq!(found.len(), 1);
    assert!(
        found[0].contains("needs the chain written inline"),
        "{found:#?}"
    );
    assert_one_error(
        quote! { mod post { #[cfg(unix)] #[wire_check] pub type C = C; pub type Validate = V; } },
        "`#[cfg]` on a stage is not supported",
    );
    assert_one_error(
        quote! { mod post { #[cfg_attr(unix, allow(x))] pub type Validate = V; } },
        "`#[cfg_attr]` on a stage is not supported",
    );
    // `cfg` on a helper item is the user's business.
    assert_eq!(
        errors(quote! { mod post { #[cfg(unix)] const C: u8 = 1; pub type Validate = V; } }),
        Vec::<String>::new()
    );
}

#[test]
fn validate_takes_no_tag_and_body_bound_means_nothing_after_it() {
    assert_one_error(
        quote! { mod post { #[wire_check] pub type Validate = V; } },
        "`Validate` takes no tag",
    );
    assert_one_error(
        quote! { mod post { pub type Validate = V; #[body_bound(reason = "r")] pub type D = D; } },
        "`#[body_bound]` on stage `D`, which runs after `Validate`",
    );
}

#[test]
fn the_generated_names_cannot_be_taken() {
    for name in ["handle", "router"] {
        let ident = syn::Ident::new(name, proc_macro2::Span::call_site());
        assert_one_error(
            quote! { mod post { fn #ident() {} pub type Validate = V; } },
            &format!("an item cannot be named `{name}`"),
        );
    }
    assert_one_error(
        quote! { mod post { const CHAIN: u8 = 1; pub type Validate = V; } },
        "an item cannot be named `CHAIN`",
    );
}

#[test]
fn every_mistake_of_a_module_is_reported_in_the_order_of_its_items() {
    let errors = errors(quote! {
        mod post {
            pub type OriginCheck = O;
            #[body_bound(reason = "")] pub type Classify = C;
            #[wire_check] #[wire_check] pub type Auth = A;
            #[wire_check] const LIMIT: u8 = 3;
            pub type Validate = V;
            #[wire_check] pub type HeaderBinding = H;
        }
    });
    let expected = [
        "stage `OriginCheck` runs before `Validate` but is not declared",
        "empty `reason`",
        "`#[wire_check]` is repeated",
        "`#[wire_check]` tags a stage, and a `const` is not one",
        "`#[wire_check]` stage `HeaderBinding` runs after `Validate`",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (error, fragment) in errors.iter().zip(expected) {
        assert!(
            error.contains(fragment),
            "{error:?} does not mention {fragment:?}"
        );
    }
}
