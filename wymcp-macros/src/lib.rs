//! The `#[pipeline]` attribute of wymcp. Use it through `wymcp`, which
//! re-exports it; generated code names only `::wymcp::__private`.

use proc_macro::TokenStream;

/// Declares a POST chain in a module. (Skeleton: replaced by the real macro.)
#[proc_macro_attribute]
pub fn pipeline(_args: TokenStream, input: TokenStream) -> TokenStream {
    input
}

/// Tags a stage before `Validate` as a wire check; only valid inside `#[pipeline]`.
#[proc_macro_attribute]
pub fn wire_check(_args: TokenStream, _input: TokenStream) -> TokenStream {
    syn_error("`#[wire_check]` is only valid on a stage inside a `#[wymcp::pipeline]` module")
}

/// Tags a stage before `Validate` as body-bound; only valid inside `#[pipeline]`.
#[proc_macro_attribute]
pub fn body_bound(_args: TokenStream, _input: TokenStream) -> TokenStream {
    syn_error("`#[body_bound]` is only valid on a stage inside a `#[wymcp::pipeline]` module")
}

fn syn_error(message: &str) -> TokenStream {
    syn::Error::new(proc_macro2::Span::call_site(), message)
        .to_compile_error()
        .into()
}
