//! [`DevTokens`]: the bearer tokens of a server's first runs, read from the
//! command line or the environment, and the start message that says how to
//! connect with them.

use crate::auth::{Principal, StaticTokens};

/// Static bearer tokens for development, one per role (`reader`,
/// `writer`, …): each read from `--ROLE-token` on the command line, else
/// from `PREFIX_ROLE_TOKEN` in the environment (a command line is visible to
/// every user of the machine), else its default. It makes the
/// [`StaticTokens`] of the server (each token's principal has the role as
/// its subject and the role's scopes) and [`how_to_connect`](Self::how_to_connect),
/// the message a server prints on start: its URL, each role's token (only
/// defaults are shown: a token of your own is a secret), and a curl and an
/// MCP Inspector line listing the tools with the last role's token.
///
/// ```
/// use wymcp::serve::DevTokens;
///
/// let tokens = DevTokens::new("NOTES")
///     .role("reader", "R", ["notes:read"], "search and read notes")
///     .role("writer", "W", ["notes:read", "notes:write"], "also change notes");
/// let printed = tokens.how_to_connect("http://127.0.0.1:3000/mcp");
/// assert!(printed.contains("reader token: R (search and read notes)"));
/// let _auth = tokens.static_tokens()?; // for `ServerBuilder::auth`
/// let same = tokens.given("reader", "W").static_tokens().unwrap_err();
/// assert_eq!(same, "the reader and writer tokens must differ");
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone)]
pub struct DevTokens {
    prefix: String,
    roles: Vec<Role>,
}

#[derive(Debug, Clone)]
struct Role {
    name: String,
    default: String,
    token: String,
    scopes: Vec<String>,
    may: String,
}

impl DevTokens {
    /// No role yet; `env_prefix` starts the environment variables' names
    /// (`NOTES`: `NOTES_READER_TOKEN`).
    #[must_use]
    pub fn new(env_prefix: impl Into<String>) -> Self {
        DevTokens {
            prefix: env_prefix.into(),
            roles: Vec::new(),
        }
    }

    /// A role: its name, its default token, its scopes, and what it may do
    /// (for the start message). Its token is the default until
    /// [`from_args_and_env`](Self::from_args_and_env) or [`given`](Self::given).
    #[must_use]
    pub fn role(
        mut self,
        name: impl Into<String>,
        default: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
        may: impl Into<String>,
    ) -> Self {
        let default = default.into();
        self.roles.push(Role {
            name: name.into(),
            token: default.clone(),
            default,
            scopes: scopes.into_iter().map(Into::into).collect(),
            may: may.into(),
        });
        self
    }

    /// The role `name`'s token is `token` (a role it lacks: unchanged).
    #[must_use]
    pub fn given(mut self, name: &str, token: impl Into<String>) -> Self {
        if let Some(role) = self.roles.iter_mut().find(|r| r.name == name) {
            role.token = token.into();
        }
        self
    }

    /// Each role's token from `--ROLE-token` in the process's arguments,
    /// else `PREFIX_ROLE_TOKEN` in its environment, else unchanged.
    #[must_use]
    pub fn from_args_and_env(mut self) -> Self {
        for role in &mut self.roles {
            if let Some(token) = arg_or_env(&role.flag(), &role.env(&self.prefix)) {
                role.token = token;
            }
        }
        self
    }

    /// The token of the role `name`.
    #[must_use]
    pub fn token(&self, name: &str) -> Option<&str> {
        let role = self.roles.iter().find(|r| r.name == name)?;
        Some(&role.token)
    }

    /// The server's tokens: each role's principal (the role its subject,
    /// with its scopes). Two roles with one token, or an empty one, are
    /// refused: a caller would not know which it is.
    ///
    /// # Errors
    ///
    /// The reason, naming the roles (never the tokens).
    pub fn static_tokens(&self) -> Result<StaticTokens, String> {
        let mut tokens = StaticTokens::new();
        for (at, role) in self.roles.iter().enumerate() {
            if role.token.is_empty() {
                return Err(format!("the {} token is empty", role.name));
            }
            if let Some(other) = self.roles[..at].iter().find(|r| r.token == role.token) {
                return Err(format!(
                    "the {} and {} tokens must differ",
                    other.name, role.name
                ));
            }
            let principal = Principal::new(role.name.clone(), role.scopes.iter().cloned());
            tokens = tokens.token(&role.token, principal);
        }
        Ok(tokens)
    }

    /// What a server prints on start: `listening on URL`, a line per role
    /// (`reader token: R (search and read notes)`), where the tokens come
    /// from, and a curl and an MCP Inspector command listing the tools with
    /// the last role's token. A token that is not its role's default is
    /// shown as `<ROLE token>`.
    #[must_use]
    pub fn how_to_connect(&self, url: &str) -> String {
        let defaults = self.roles.iter().all(|r| r.token == r.default);
        let shown = |role: &Role| {
            if defaults {
                role.token.clone()
            } else {
                format!("<{} token>", role.name)
            }
        };
        let mut lines = vec![format!("listening on {url}")];
        for role in &self.roles {
            lines.push(format!(
                "{} token: {} ({})",
                role.name,
                shown(role),
                role.may
            ));
        }
        let flags: Vec<String> = self.roles.iter().map(Role::flag).collect();
        let envs: Vec<String> = self.roles.iter().map(|r| r.env(&self.prefix)).collect();
        let source = if defaults {
            "development defaults; set your own with"
        } else {
            "given by"
        };
        lines.push(format!(
            "({source} {} or {})",
            flags.join("/"),
            envs.join("/")
        ));
        let last = self.roles.last().map(shown).unwrap_or_default();
        lines.push("list the tools:".to_owned());
        lines.push(format!(
            "  curl -s -H 'Authorization: Bearer {last}' -H 'Content-Type: application/json' \
             -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}}' {url}"
        ));
        lines.push("or with the MCP Inspector (Node.js):".to_owned());
        lines.push(format!(
            "  npx @modelcontextprotocol/inspector --cli {url} --method tools/list \
             --header 'Authorization: Bearer {last}'"
        ));
        lines.join("\n")
    }
}

impl Role {
    fn flag(&self) -> String {
        format!("--{}-token", self.name)
    }

    fn env(&self, prefix: &str) -> String {
        format!("{prefix}_{}_TOKEN", self.name.to_uppercase())
    }
}

/// The value after `flag` in the process's arguments (`--port 3000`), else
/// the environment variable `env`, else `None`.
#[must_use]
pub fn arg_or_env(flag: &str, env: &str) -> Option<String> {
    let mut args = std::env::args().skip_while(|arg| arg != flag);
    args.nth(1).or_else(|| std::env::var(env).ok())
}
