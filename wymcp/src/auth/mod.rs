//! Authentication: the [`Authenticator`] a server is built with, the Bearer
//! helpers, the challenges the [`Auth`](crate::stages::Auth) stage answers
//! with, and the RFC 9728 protected-resource metadata document.
//!
//! ```
//! use wymcp::Server;
//! use wymcp::auth::{AuthConfig, AuthError, BearerAuth, Principal};
//!
//! let server = Server::builder()
//!     .auth(
//!         BearerAuth::new(|token: String| async move {
//!             if token == "let-me-in" {
//!                 Ok(Principal { subject: "alice".into(), scopes: vec!["mcp".into()], ..Principal::default() })
//!             } else {
//!                 Err(AuthError::Unauthorized)
//!             }
//!         }),
//!         AuthConfig::new()
//!             .resource("https://mcp.example.com/mcp")
//!             .authorization_server("https://auth.example.com")
//!             .required_scopes(["mcp"]),
//!     )
//!     .build()
//!     .unwrap();
//! assert_eq!(
//!     server.auth_config().unwrap().metadata_url().as_deref(),
//!     Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp"),
//! );
//! ```

pub(crate) mod algorithm;
mod authenticator;
mod bearer;
mod cache;
pub(crate) mod certificate;
mod client_certificate;
mod config;
mod dpop;
mod fetch;
pub(crate) mod introspection;
pub(crate) mod jwks;
pub(crate) mod jwt;
mod verifier;

pub use algorithm::Algorithm;
pub(crate) use authenticator::AuthSetup;
pub use authenticator::{
    AuthError, AuthFuture, Authenticator, Credentials, Principal, Recheck, RecheckFuture,
};
pub use bearer::{BearerAuth, StaticTokens};
pub use certificate::CertificateAuth;
pub use client_certificate::ClientCertificate;
pub use config::{
    AuthConfig, AuthConfigError, MAX_ERROR_DESCRIPTION, METADATA_PATH, error_description,
};
pub use dpop::{
    DEFAULT_MAX_PROOF_BYTES, DEFAULT_WINDOW, DPOP_HEADER, DPOP_NONCE_HEADER, Dpop, DpopMode,
    DpopReplay, MAX_JTI_BYTES, NONCE_SLOT, ReplayFuture,
};
pub use introspection::{Introspection, IntrospectionBuilder};
pub use jwt::{JwtVerifier, JwtVerifierBuilder};
pub use verifier::VerifierConfigError;
