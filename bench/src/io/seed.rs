//! The Redis data of the I/O workload, seeded before each server's run:
//! the public benchmark's keys and formulas (its `seed.py`), written with
//! pipelines.
//!
//! * `bench:cart:user-NNNNN` (10,000 hashes): `user_id`, `items` (JSON of 2
//!   or 3 `{product_id, qty}`), `created`, `expires`, `total`;
//! * `bench:history:user-NNNNN` (1,000 lists of 20 JSON entries);
//! * `bench:popular` (a sorted set of 100,000 `product:{i}`, score
//!   `i × 7 mod 10,000`);
//! * `bench:ratelimit:user-NNNNN` (100 counters at 0).

use std::fmt::Write as _;

/// Carts seeded.
pub const CARTS: u64 = 10_000;
/// Histories seeded.
pub const HISTORIES: u64 = 1_000;
/// Entries of each history.
pub const HISTORY_ENTRIES: u64 = 20;
/// Members of `bench:popular`.
pub const POPULAR: u64 = 100_000;
/// Rate-limit counters seeded.
pub const RATE_LIMITS: u64 = 100;

/// User `n`'s id: `user-NNNNN`.
#[must_use]
pub fn user(n: u64) -> String {
    format!("user-{n:05}")
}

/// The `(product_id, qty)` of cart `n`'s items.
#[must_use]
pub fn cart_items(n: u64) -> Vec<(u64, u64)> {
    let mut items = vec![
        ((n * 7) % 100_000 + 1, 1 + n % 3),
        ((n * 13) % 100_000 + 1, 1 + n % 2),
    ];
    if n.is_multiple_of(3) {
        items.push(((n * 17) % 100_000 + 1, 1));
    }
    items
}

/// Cart `n`'s `items` field, spelt as Python's `json.dumps` spells it.
#[must_use]
pub fn cart_items_json(n: u64) -> String {
    let mut out = String::from("[");
    for (k, (product, qty)) in cart_items(n).into_iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, r#"{{"product_id": {product}, "qty": {qty}}}"#);
    }
    out.push(']');
    out
}

/// Cart `n`'s `total` field (a rough total, as the original's: not the
/// catalog's prices), two decimals.
#[must_use]
pub fn cart_total(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let total: f64 = cart_items(n)
        .into_iter()
        .map(|(product, qty)| qty as f64 * (((product * 100) % 9_999) + 1) as f64 / 100.0)
        .sum();
    format!("{total:.2}")
}

/// Entry `j` (1 to 20) of user `n`'s history, spelt as `json.dumps` does.
#[must_use]
pub fn history_entry(n: u64, j: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let price = crate::io::catalog::round2(((n * j * 13) % 9_999 + 1) as f64 / 100.0);
    format!(
        r#"{{"order_id": "ORD-{n:05}-{j:02}", "product_id": {}, "qty": {}, "price": {}, "ts": {}}}"#,
        (n * j * 7) % 100_000 + 1,
        1 + j % 3,
        serde_json::Value::from(price),
        1_740_000_000 + n * 86_400 + j * 3_600,
    )
}

/// `bench:popular`'s score of `product:{i}`.
#[must_use]
pub fn popularity(i: u64) -> u64 {
    i * 7 % 10_000
}

/// Empties the Redis at `conn` and seeds it: the carts, histories, the
/// popular set and the rate limits, in pipelines of a few thousand
/// commands.
///
/// # Errors
/// Redis's.
pub async fn seed(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<()> {
    redis::cmd("FLUSHALL").query_async::<()>(conn).await?;
    let mut pipe = redis::pipe();
    for n in 1..=CARTS {
        pipe.cmd("HSET")
            .arg(format!("bench:cart:{}", user(n)))
            .arg("user_id")
            .arg(user(n))
            .arg("items")
            .arg(cart_items_json(n))
            .arg("created")
            .arg("1740000000")
            .arg("expires")
            .arg("1740086400")
            .arg("total")
            .arg(cart_total(n))
            .ignore();
        if n % 2_000 == 0 {
            pipe.query_async::<()>(conn).await?;
            pipe = redis::pipe();
        }
    }
    for n in 1..=HISTORIES {
        let entries: Vec<String> = (1..=HISTORY_ENTRIES).map(|j| history_entry(n, j)).collect();
        pipe.cmd("RPUSH")
            .arg(format!("bench:history:{}", user(n)))
            .arg(entries)
            .ignore();
    }
    pipe.query_async::<()>(conn).await?;
    let mut pipe = redis::pipe();
    for chunk in (1..=POPULAR).collect::<Vec<_>>().chunks(5_000) {
        let mut zadd = redis::cmd("ZADD");
        zadd.arg("bench:popular");
        for &i in chunk {
            zadd.arg(popularity(i)).arg(format!("product:{i}"));
        }
        pipe.add_command(zadd).ignore();
    }
    for n in 1..=RATE_LIMITS {
        pipe.cmd("SET")
            .arg(format!("bench:ratelimit:{}", user(n)))
            .arg(0)
            .ignore();
    }
    pipe.query_async::<()>(conn).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carts_follow_the_formulas() {
        assert_eq!(cart_items(1), vec![(8, 2), (14, 2)]);
        assert_eq!(cart_items(3), vec![(22, 1), (40, 2), (52, 1)]);
        assert_eq!(cart_items(10_000), vec![(70_001, 2), (30_001, 1)]);
        assert_eq!(
            cart_items_json(3),
            r#"[{"product_id": 22, "qty": 1}, {"product_id": 40, "qty": 2}, {"product_id": 52, "qty": 1}]"#
        );
        // 2 × (800 % 9999 + 1) / 100 + 2 × (1400 % 9999 + 1) / 100 = 16.02 + 28.02
        assert_eq!(cart_total(1), "44.04");
        assert!((1..=CARTS).all(|n| (2..=3).contains(&cart_items(n).len())));
    }

    #[test]
    fn histories_follow_the_formulas() {
        assert_eq!(
            history_entry(1, 1),
            r#"{"order_id": "ORD-00001-01", "product_id": 8, "qty": 2, "price": 0.14, "ts": 1740090000}"#
        );
        assert_eq!(
            history_entry(1000, 20),
            r#"{"order_id": "ORD-01000-20", "product_id": 40001, "qty": 3, "price": 0.27, "ts": 1826472000}"#
        );
        // Every entry is JSON.
        for j in 1..=HISTORY_ENTRIES {
            let entry: serde_json::Value =
                serde_json::from_str(&history_entry(7, j)).expect("JSON");
            assert_eq!(entry["qty"], 1 + j % 3);
        }
    }

    #[test]
    fn popularity_and_users() {
        assert_eq!(popularity(1), 7);
        assert_eq!(popularity(10_000), 0);
        assert_eq!(popularity(1_430), 10);
        assert_eq!(user(42), "user-00042");
    }
}
