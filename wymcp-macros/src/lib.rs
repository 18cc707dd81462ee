//! The `#[pipeline]` attribute of wymcp. Use it through `wymcp`, which
//! re-exports it; generated code names only `::wymcp::__private`.
//!
//! The passes, in order: [`ast`] reads the module into stages and helper
//! items, [`attr`] reads each stage's tag, [`check`] applies the rules across
//! stages, and [`expand`] writes the tokens. Every pass records its errors in
//! one [`ctxt::Ctxt`], so a build reports every mistake at once.

use proc_macro::TokenStream;

mod ast;
mod attr;
mod check;
mod ctxt;
mod expand;

#[cfg(test)]
mod tests;

/// Declares a POST chain in a module. See the `wymcp` crate's documentation.
#[proc_macro_attribute]
pub fn pipeline(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::pipeline(args.into(), input.into()).into()
}

/// Tags a stage before `Validate` as a wire check; only valid inside `#[pipeline]`.
#[proc_macro_attribute]
pub fn wire_check(_args: TokenStream, input: TokenStream) -> TokenStream {
    outside_pipeline(attr::WIRE_CHECK, input)
}

/// Tags a stage before `Validate` as body-bound; only valid inside `#[pipeline]`.
#[proc_macro_attribute]
pub fn body_bound(_args: TokenStream, input: TokenStream) -> TokenStream {
    outside_pipeline(attr::BODY_BOUND, input)
}

/// A tag met on its own: the item stays (so nothing else fails to resolve)
/// and the tag is refused.
fn outside_pipeline(tag: &str, input: TokenStream) -> TokenStream {
    let message = format!(
        "`#[{tag}]` is only valid on a stage inside a `#[wymcp::pipeline]` module, where it \
         is read relative to `Validate`; move the stage into such a module or remove the tag"
    );
    let error = syn::Error::new(proc_macro2::Span::call_site(), message).to_compile_error();
    let input = proc_macro2::TokenStream::from(input);
    quote::quote!(#error #input).into()
}
