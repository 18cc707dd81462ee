//! The Skills extension (SEP-2640): `skills/list` and `skills/get` (paged,
//! cacheable on 2026-07-28, -32602 for a skill not served), each skill's
//! files as resources, `resources/directory/read` behind `directoryRead`
//! (-32601 without it), what each era is offered, and every check made
//! when the server is built, each error naming the file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::testing::{Client, Failure};
use wymcp::{BuildError, Server, Skill, SkillError, SurfaceError};

use crate::support::{assert_failure, assert_schema};

/// A directory under the system's temporary directory, unique to one test,
/// removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "wymcp-skills-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    /// Writes `contents` at `rel`, making its directories.
    fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> &Self {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
        self
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ALPHA_MD: &str = "---\nname: alpha\ndescription: The first skill\nlicense: MIT\nmetadata:\n  version: \"1.0\"\n---\n# Alpha\nSee `refs/hello.txt`.\n";
const BETA_MD: &str = "---\nname: beta\ndescription: The second skill\n---\n# Beta\n";

/// Two skills on disk: `alpha` with a subdirectory holding a text and a
/// binary file, `beta` alone.
fn two_skills() -> TempDir {
    let dir = TempDir::new("two");
    dir.write("alpha/SKILL.md", ALPHA_MD)
        .write("alpha/refs/hello.txt", "hello\n")
        .write("alpha/refs/blob.bin", [0u8, 0xff, 1])
        .write("beta/SKILL.md", BETA_MD);
    dir
}

fn server_of(dir: &TempDir) -> Server {
    Server::builder().skills_dir(dir.path()).build().unwrap()
}

fn sha256_of_hello() -> &'static str {
    "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
}

/// Asserts a rejection of a 2026 request: its status, code and id (by
/// `assert_failure`) and that it is a JSON answer.
#[track_caller]
fn assert_rejected(failure: &Failure, status: StatusCode, code: i64) -> Value {
    let data = assert_failure(failure, status, code);
    assert!(
        failure
            .exchange
            .header("content-type")
            .starts_with("application/json"),
        "{failure}"
    );
    data
}

/// The extension is declared on 2026-07-28 with `directoryRead`, beside
/// the `resources` capability it requires; a 2025 client is offered
/// neither the extension nor its methods (-32601), and reads the skill's
/// files as ordinary resources.
#[tokio::test]
async fn the_extension_is_declared_on_2026_only() {
    let dir = two_skills();
    let client = Client::new(server_of(&dir));
    let discover = client.send("server/discover", json!({})).await;
    let caps = &discover.result().unwrap()["capabilities"];
    assert_eq!(
        caps["extensions"],
        json!({"io.modelcontextprotocol/skills": {"directoryRead": true}})
    );
    assert!(caps["resources"].is_object(), "{caps}");

    let legacy = client.legacy();
    let init = legacy
        .send(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    let caps = &init.result().unwrap()["capabilities"];
    assert!(caps.get("extensions").is_none(), "{caps}");
    assert!(caps["resources"].is_object(), "{caps}");
    for method in ["skills/list", "skills/get", "resources/directory/read"] {
        let answer = legacy.send(method, json!({"uri": "skill://alpha"})).await;
        let data = assert_failure(&answer.result().unwrap_err(), StatusCode::OK, -32601);
        assert_eq!(data, json!({"method": method}));
    }
    let read = legacy
        .send(
            "resources/read",
            json!({"uri": "skill://alpha/refs/hello.txt"}),
        )
        .await;
    assert_eq!(read.result().unwrap()["contents"][0]["text"], "hello\n");
}

/// `skills/list`: one entry a skill, by URI, with its verbatim front matter
/// and its complete manifest (SKILL.md first, each file's digest and size),
/// paged by the server's page size, each page cacheable; `skills/get`
/// answers the same entry, cacheable, with no cursor.
#[tokio::test]
async fn lists_and_gets_skills() {
    let dir = two_skills();
    let server = Server::builder()
        .page_size(1)
        .skills_dir(dir.path())
        .build()
        .unwrap();
    let client = Client::new(server);
    let first = client.send("skills/list", json!({})).await;
    let first = first.result().unwrap().clone();
    assert_eq!(first["skills"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&first["ttlMs"], &first["cacheScope"], &first["resultType"]),
        (&json!(0), &json!("private"), &json!("complete"))
    );
    let alpha = &first["skills"][0];
    assert_eq!(alpha["uri"], "skill://alpha/SKILL.md");
    assert_eq!(
        alpha["frontmatter"],
        json!({"name": "alpha", "description": "The first skill", "license": "MIT", "metadata": {"version": "1.0"}})
    );
    let manifest = alpha["resources"].as_array().unwrap();
    let uris: Vec<&str> = manifest
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "skill://alpha/SKILL.md",
            "skill://alpha/refs/blob.bin",
            "skill://alpha/refs/hello.txt"
        ]
    );
    assert_eq!(manifest[0]["size"], ALPHA_MD.len());
    assert_eq!(
        manifest[1]["digest"],
        "sha256:47ffa3ea45a70b8a41c2c0825df323c00a8b7a01c1ea06083cc41dddcc001123"
    );
    assert_eq!(
        (&manifest[2]["digest"], &manifest[2]["size"]),
        (&json!(sha256_of_hello()), &json!(6))
    );
    let cursor = first["nextCursor"].clone();
    assert!(cursor.is_string(), "{first}");
    let second = client.send("skills/list", json!({"cursor": cursor})).await;
    let second = second.result().unwrap();
    assert_eq!(second["skills"][0]["uri"], "skill://beta/SKILL.md");
    assert!(second.get("nextCursor").is_none());

    let got = client
        .send("skills/get", json!({"uri": "skill://alpha/SKILL.md"}))
        .await;
    let got = got.result().unwrap();
    assert_eq!(&got["skill"], alpha);
    assert!(got.get("nextCursor").is_none());
    assert_eq!(
        (&got["ttlMs"], &got["cacheScope"]),
        (&json!(0), &json!("private"))
    );

    let bad = client
        .send("skills/list", json!({"cursor": "forged"}))
        .await;
    assert_rejected(&bad.result().unwrap_err(), StatusCode::BAD_REQUEST, -32602);
}

/// Asserts `method` refuses each of `uris` with 400/-32602, the URI in
/// `data`.
async fn assert_each_uri_invalid(client: &Client, method: &str, uris: &[&str]) {
    for uri in uris {
        let answer = client.send(method, json!({"uri": uri})).await;
        let data = assert_rejected(
            &answer.result().unwrap_err(),
            StatusCode::BAD_REQUEST,
            -32602,
        );
        assert_eq!(data, json!({"uri": uri}), "{method} {uri}");
    }
}

/// A URI that names no skill served, or no URI at all, is -32602 (the
/// SEP's code for an unknown skill), the URI in `data`.
#[tokio::test]
async fn an_unknown_skill_is_invalid_params() {
    let dir = two_skills();
    let client = Client::new(server_of(&dir));
    assert_each_uri_invalid(
        &client,
        "skills/get",
        &[
            "skill://nope/SKILL.md",
            "skill://alpha/refs/hello.txt",
            "skill://alpha",
        ],
    )
    .await;
    let answer = client.send("skills/get", json!({"uri": 7})).await;
    assert_rejected(
        &answer.result().unwrap_err(),
        StatusCode::BAD_REQUEST,
        -32602,
    );
}

/// Each file is a resource: SKILL.md named and described from its front
/// matter, `text/markdown`; a text file read as text, a binary one as a
/// blob; both listed with their size.
#[tokio::test]
async fn skill_files_are_resources() {
    let dir = two_skills();
    let client = Client::new(server_of(&dir));
    let listed = client.list_resources().await.unwrap();
    let md = listed
        .iter()
        .find(|r| r["uri"] == "skill://alpha/SKILL.md")
        .unwrap();
    assert_eq!(
        md,
        &json!({"uri": "skill://alpha/SKILL.md", "name": "alpha", "description": "The first skill", "mimeType": "text/markdown", "size": ALPHA_MD.len()})
    );
    assert_eq!(listed.len(), 4);
    let answer = client
        .send("resources/read", json!({"uri": "skill://alpha/SKILL.md"}))
        .await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "ReadResourceResult", result);
    assert_eq!(
        result["contents"],
        json!([{"uri": "skill://alpha/SKILL.md", "mimeType": "text/markdown", "text": ALPHA_MD}])
    );
    // A URI is looked up among the files held, never made a path.
    assert_each_uri_invalid(
        &client,
        "resources/read",
        &[
            "skill://alpha/refs/../SKILL.md",
            "skill://alpha/refs%2Fhello.txt",
            "skill://alpha/refs",
        ],
    )
    .await;
    let blob = client
        .read_resource("skill://alpha/refs/blob.bin")
        .await
        .unwrap();
    assert_eq!(
        blob,
        [
            json!({"uri": "skill://alpha/refs/blob.bin", "mimeType": "application/octet-stream", "blob": "AP8B"})
        ]
    );
}

/// `resources/directory/read`: a skill's root and each subdirectory list
/// their direct children (a subdirectory as `inode/directory`), paged as
/// lists are; a file, or a URI naming nothing, is -32602.
#[tokio::test]
async fn reads_directories() {
    let dir = two_skills();
    let server = Server::builder()
        .page_size(1)
        .skills_dir(dir.path())
        .build()
        .unwrap();
    let client = Client::new(server);
    let mut children = Vec::new();
    let mut params = json!({"uri": "skill://alpha"});
    for _ in 0..5 {
        let answer = client
            .send("resources/directory/read", params.clone())
            .await;
        let result = answer.result().unwrap().clone();
        assert_eq!(result["resultType"], "complete");
        assert!(result.get("ttlMs").is_none(), "{result}");
        children.extend(result["resources"].as_array().unwrap().clone());
        match result.get("nextCursor") {
            Some(cursor) => params = json!({"uri": "skill://alpha", "cursor": cursor}),
            None => break,
        }
    }
    assert_eq!(
        children,
        [
            json!({"uri": "skill://alpha/SKILL.md", "name": "alpha", "description": "The first skill", "mimeType": "text/markdown", "size": ALPHA_MD.len()}),
            json!({"uri": "skill://alpha/refs", "name": "refs", "mimeType": "inode/directory"}),
        ]
    );
    let client = Client::new(server_of(&dir));
    let answer = client
        .send(
            "resources/directory/read",
            json!({"uri": "skill://alpha/refs"}),
        )
        .await;
    let names: Vec<&Value> = answer.result().unwrap()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["name"])
        .collect();
    assert_eq!(names, [&json!("blob.bin"), &json!("hello.txt")]);
    assert_each_uri_invalid(
        &client,
        "resources/directory/read",
        &[
            "skill://alpha/SKILL.md",
            "skill://nope",
            "skill://alpha/refs/",
        ],
    )
    .await;
    // No URI, or not a string; a cursor not minted for this directory.
    for params in [
        json!({}),
        json!({"uri": 7}),
        json!({"uri": "skill://alpha", "cursor": "forged"}),
    ] {
        let answer = client.send("resources/directory/read", params).await;
        assert_rejected(
            &answer.result().unwrap_err(),
            StatusCode::BAD_REQUEST,
            -32602,
        );
    }
}

/// Without `directoryRead` the setting is not declared and the method is
/// 404/-32601, as any method the server does not serve.
#[tokio::test]
async fn without_directory_read_the_method_is_not_found() {
    let dir = two_skills();
    let server = Server::builder()
        .skills_dir(dir.path())
        .skills_directory_read(false)
        .build()
        .unwrap();
    let client = Client::new(server);
    let discover = client.send("server/discover", json!({})).await;
    assert_eq!(
        discover.result().unwrap()["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/skills": {}})
    );
    let answer = client
        .send("resources/directory/read", json!({"uri": "skill://alpha"}))
        .await;
    let data = assert_rejected(&answer.result().unwrap_err(), StatusCode::NOT_FOUND, -32601);
    assert_eq!(data, json!({"method": "resources/directory/read"}));
}

/// A skill given in code, under a prefix: served at its path, its prefix
/// directories readable.
#[tokio::test]
async fn a_skill_given_in_code_is_served_under_its_prefix() {
    let server = Server::builder()
        .skill(
            Skill::new(
                "refunds",
                "---\nname: refunds\ndescription: Refund per policy\n---\n",
            )
            .prefix("acme/billing")
            .file("examples/email.md", "Dear customer\n"),
        )
        .build()
        .unwrap();
    let client = Client::new(server);
    let got = client
        .send(
            "skills/get",
            json!({"uri": "skill://acme/billing/refunds/SKILL.md"}),
        )
        .await;
    assert_eq!(
        got.result().unwrap()["skill"]["resources"][1]["uri"],
        "skill://acme/billing/refunds/examples/email.md"
    );
    let answer = client
        .send("resources/directory/read", json!({"uri": "skill://acme"}))
        .await;
    assert_eq!(
        answer.result().unwrap()["resources"],
        json!([{"uri": "skill://acme/billing", "name": "billing", "mimeType": "inode/directory"}])
    );
}

/// The skill error of a build that must fail.
#[track_caller]
fn skill_error(result: Result<Server, BuildError>) -> SkillError {
    match result {
        Err(BuildError::Surface(SurfaceError::Skill(error))) => error,
        Err(other) => panic!("not a skill error: {other}"),
        Ok(_) => panic!("built"),
    }
}

/// Every check made when a skills directory is read names the file (or
/// directory) and the rule it breaks.
#[test]
fn every_build_check_names_the_file() {
    type Setup = Box<dyn Fn(&TempDir)>;
    let md = |name: &str| format!("---\nname: {name}\ndescription: d\n---\n");
    let cases: Vec<(&str, Setup, &str, &str)> = vec![
        (
            "missing SKILL.md",
            Box::new(|d| {
                d.write("a/notes.md", "x");
            }),
            "a/SKILL.md",
            "every skill has a SKILL.md",
        ),
        (
            "name differs from the directory",
            Box::new(move |d| {
                d.write("a/SKILL.md", md("b"));
            }),
            "a/SKILL.md",
            "is not the skill's name `a`",
        ),
        (
            "directory name breaks the naming rules",
            Box::new(move |d| {
                d.write("Bad--Name/SKILL.md", md("Bad--Name"));
            }),
            "Bad--Name",
            "naming rules",
        ),
        (
            "no description",
            Box::new(|d| {
                d.write("a/SKILL.md", "---\nname: a\n---\n");
            }),
            "a/SKILL.md",
            "no `description`",
        ),
        (
            "no front matter",
            Box::new(|d| {
                d.write("a/SKILL.md", "# A\n");
            }),
            "a/SKILL.md",
            "must begin with a `---` line",
        ),
        (
            "a value YAML reads as a number",
            Box::new(|d| {
                d.write(
                    "a/SKILL.md",
                    "---\nname: a\ndescription: d\nversion: 1.0\n---\n",
                );
            }),
            "a/SKILL.md",
            "number",
        ),
        (
            "description too long",
            Box::new(|d| {
                d.write(
                    "a/SKILL.md",
                    format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025)),
                );
            }),
            "a/SKILL.md",
            "longer than 1024",
        ),
        (
            "reserved metadata key",
            Box::new(|d| {
                d.write(
                    "a/SKILL.md",
                    "---\nname: a\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: z\n---\n",
                );
            }),
            "a/SKILL.md",
            "reserved",
        ),
        (
            "SKILL.md not UTF-8",
            Box::new(|d| {
                d.write("a/SKILL.md", [0xffu8, 0xfe]);
            }),
            "a/SKILL.md",
            "not UTF-8",
        ),
        (
            "a file at the root",
            Box::new(move |d| {
                d.write("a/SKILL.md", md("a")).write("README.md", "x");
            }),
            "README.md",
            "only skill directories",
        ),
        (
            "a file name that is no URI segment",
            Box::new(move |d| {
                d.write("a/SKILL.md", md("a")).write("a/my notes.md", "x");
            }),
            "a/my notes.md",
            "not a URI path segment",
        ),
        (
            "too many files",
            Box::new(move |d| {
                d.write("a/SKILL.md", md("a"));
                for i in 0..wymcp::MAX_SKILL_FILES {
                    d.write(&format!("a/f/{i}.txt"), "x");
                }
            }),
            "a/f/",
            "more than the 512 files",
        ),
        (
            "too deep",
            Box::new(move |d| {
                d.write("a/SKILL.md", md("a"))
                    .write("a/1/2/3/4/5/6/7/8/9/deep.txt", "x");
            }),
            "a/1/2/3/4/5/6/7/8/9",
            "deeper than 8",
        ),
        (
            "too large",
            Box::new(move |d| {
                d.write("a/SKILL.md", md("a"));
                let big = vec![b'x'; usize::try_from(wymcp::MAX_SKILL_BYTES).unwrap()];
                d.write("a/big.txt", big);
            }),
            "a/big.txt",
            "too large",
        ),
    ];
    for (case, setup, file, rule) in cases {
        let dir = TempDir::new("bad");
        setup(&dir);
        let error = skill_error(Server::builder().skills_dir(dir.path()).build());
        let expected = dir.path().join(file).display().to_string();
        assert!(
            error.file.starts_with(&expected),
            "{case}: `{}` is not `{expected}`",
            error.file
        );
        assert!(error.rule.contains(rule), "{case}: {}", error.rule);
        let shown = BuildError::Surface(SurfaceError::Skill(error)).to_string();
        assert!(shown.contains(&expected), "{case}: {shown}");
    }

    // A symbolic link is never followed.
    let dir = TempDir::new("link");
    dir.write("a/SKILL.md", md("a"));
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("a/passwd")).unwrap();
    let error = skill_error(Server::builder().skills_dir(dir.path()).build());
    assert!(error.file.ends_with("a/passwd"), "{}", error.file);
    assert!(error.rule.contains("symbolic link"), "{}", error.rule);

    // A directory that cannot be read.
    let missing = std::env::temp_dir().join("wymcp-skills-no-such-dir");
    let error = skill_error(Server::builder().skills_dir(&missing).build());
    assert_eq!(error.file, missing.display().to_string());
    assert!(error.rule.contains("cannot be read"), "{}", error.rule);
}

/// The checks of skills given in code name the file by its URI.
#[test]
fn skills_given_in_code_are_checked() {
    let md = "---\nname: a\ndescription: d\n---\n";
    for (skill, file, rule) in [
        (
            Skill::new("a", md).file("x.md", "1").file("x.md", "2"),
            "skill://a/x.md",
            "given twice",
        ),
        (
            Skill::new("a", md).file("SKILL.md", "1"),
            "skill://a/SKILL.md",
            "given twice",
        ),
        (
            Skill::new("a", md).file("../x", "1"),
            "skill://a/../x",
            "not a URI path segment",
        ),
        (
            Skill::new("a", md).file("x", "1").file("x/y", "2"),
            "skill://a/x",
            "share this path",
        ),
        (
            Skill::new("a", md).prefix("a b"),
            "skill://a b/a",
            "prefix segment",
        ),
        (
            Skill::new("a", "---\nname: a\ndescription: d\nmetadata: x\n---\n"),
            "skill://a/SKILL.md",
            "map",
        ),
    ] {
        let error = skill_error(Server::builder().skill(skill).build());
        assert_eq!(
            (error.file.as_str(), error.rule.contains(rule)),
            (file, true),
            "{error}"
        );
    }
    // Two skills at one path, a skill inside another.
    for (second, rule) in [
        (Skill::new("a", md), "lies inside (or is)"),
        (
            Skill::new("b", "---\nname: b\ndescription: d\n---\n").prefix("a"),
            "lies inside",
        ),
    ] {
        let error = skill_error(
            Server::builder()
                .skill(Skill::new("a", md))
                .skill(second)
                .build(),
        );
        assert!(error.rule.contains(rule), "{error}");
    }
    // A skill file's URI that another resource already has.
    let taken = Server::builder()
        .resource(wymcp::Resource::new("skill://a/SKILL.md", "mine"))
        .skill(Skill::new("a", md))
        .build();
    assert!(matches!(
        taken,
        Err(BuildError::Surface(SurfaceError::Duplicate { .. }))
    ));
}

/// examples/skills, served by examples/everything, builds.
#[test]
fn the_example_skills_build() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/skills");
    Server::builder().skills_dir(dir).build().unwrap();
}
