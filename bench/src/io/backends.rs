//! The I/O every server of the workload does, the same code for all three:
//! a pooled HTTP/1.1 client to the API service (hyper-util's pooled client,
//! keep-alive, `TCP_NODELAY`, up to 50 idle connections, as the public
//! benchmark's Rust server sizes reqwest's) and one multiplexed Redis
//! connection (commands of concurrent calls pipelined on it), and the three
//! tools' work on them:
//!
//! * `search_products`: `GET /products/search` ∥ `ZREVRANGE bench:popular
//!   0 9`, merged: the products with their `popularity_rank`, and
//!   `top10_popular_ids`;
//! * `get_user_cart`: `HGETALL bench:cart:{user}`, then `LRANGE
//!   bench:history:{user} 0 4` ∥ `GET /products/{first product id}`;
//! * `checkout`: `POST /cart/calculate` ∥ a pipeline of `INCR` (rate
//!   limit), `RPUSH` (history) and `ZADD INCR` (popularity).
//!
//! Each answers the JSON text the benchmark's checks read, or an error
//! message (a backend failed), which a server answers as a tool error.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use serde_json::{Value, json};

use super::catalog::CartItem;

/// The most of an API answer read (the largest, a search of 1,000
/// products, is about 300 kB).
const MAX_API_BODY: usize = 1 << 20;

/// How long an API request may take.
const API_TIMEOUT: Duration = Duration::from_secs(10);

fn default_category() -> String {
    "Electronics".to_owned()
}
fn default_min_price() -> f64 {
    50.0
}
fn default_max_price() -> f64 {
    500.0
}
fn default_limit() -> u32 {
    10
}
fn default_user() -> String {
    "user-00042".to_owned()
}
fn default_items() -> Vec<CartItem> {
    vec![
        CartItem {
            product_id: 42,
            quantity: 2,
        },
        CartItem {
            product_id: 1337,
            quantity: 1,
        },
    ]
}

/// `search_products`' arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// The category (Electronics).
    #[serde(default = "default_category")]
    pub category: String,
    /// The lowest price (50).
    #[serde(default = "default_min_price")]
    pub min_price: f64,
    /// The highest price (500).
    #[serde(default = "default_max_price")]
    pub max_price: f64,
    /// How many products to answer (10).
    #[serde(default = "default_limit")]
    pub limit: u32,
}

/// `get_user_cart`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CartArgs {
    /// The user (user-00042).
    #[serde(default = "default_user")]
    pub user_id: String,
}

/// `checkout`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CheckoutArgs {
    /// The user (user-00042).
    #[serde(default = "default_user")]
    pub user_id: String,
    /// What to buy (42 × 2 and 1337 × 1).
    #[serde(default = "default_items")]
    pub items: Vec<CartItem>,
}

/// The three tools: name and description, the same in every server.
pub const TOOLS: [(&str, &str); 3] = [
    (
        "search_products",
        "Search products by category and price range, merged with popularity data",
    ),
    (
        "get_user_cart",
        "Get user cart details with recent order history",
    ),
    (
        "checkout",
        "Process checkout: calculate total, update rate limit, record history",
    ),
];

/// The pooled clients a server's tools share.
#[derive(Debug, Clone)]
pub struct Backends {
    http: Client<HttpConnector, Full<Bytes>>,
    /// `http://127.0.0.1:PORT`, the API service.
    api: Arc<str>,
    redis: redis::aio::MultiplexedConnection,
}

fn failed(what: &str) -> impl Fn(String) -> String + '_ {
    move |e| format!("{what}: {e}")
}

impl Backends {
    /// Connects to the API service at `api` (`http://HOST:PORT`) and to
    /// Redis at `redis_url`.
    ///
    /// # Errors
    /// When Redis cannot be reached.
    pub async fn connect(api: &str, redis_url: &str) -> Result<Backends, String> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let http = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(50)
            .build(connector);
        let redis = redis::Client::open(redis_url)
            .map_err(|e| e.to_string())?
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| format!("connecting to Redis: {e}"))?;
        Ok(Backends {
            http,
            api: api.trim_end_matches('/').into(),
            redis,
        })
    }

    async fn api(&self, request: http::Request<Full<Bytes>>) -> Result<Value, String> {
        let call = async {
            let response = self
                .http
                .request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_API_BODY)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            if !status.is_success() {
                return Err(format!("status {status}"));
            }
            serde_json::from_slice(&body).map_err(|e| e.to_string())
        };
        tokio::time::timeout(API_TIMEOUT, call)
            .await
            .map_err(|_| "timed out".to_owned())?
    }

    async fn get(&self, path_and_query: &str) -> Result<Value, String> {
        let request = http::Request::get(format!("{}{path_and_query}", self.api))
            .body(Full::default())
            .map_err(|e| e.to_string())?;
        self.api(request).await
    }

    async fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        let request = http::Request::post(format!("{}{path}", self.api))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())?;
        self.api(request).await
    }

    /// `search_products`: the search and the ten most popular, in parallel.
    ///
    /// # Errors
    /// A backend's failure, in words.
    pub async fn search_products(&self, args: SearchArgs) -> Result<String, String> {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("category", &args.category)
            .append_pair("min_price", &args.min_price.to_string())
            .append_pair("max_price", &args.max_price.to_string())
            .append_pair("limit", &args.limit.to_string())
            .finish();
        let path = format!("/products/search?{query}");
        let mut redis = self.redis.clone();
        let popular = async move {
            redis::cmd("ZREVRANGE")
                .arg("bench:popular")
                .arg(0)
                .arg(9)
                .query_async::<Vec<String>>(&mut redis)
                .await
                .map_err(|e| e.to_string())
        };
        let (search, popular) = tokio::join!(self.get(&path), popular);
        let search = search.map_err(failed("the search"))?;
        let popular = popular.map_err(failed("ZREVRANGE"))?;
        let top10: Vec<u64> = popular
            .iter()
            .filter_map(|m| m.strip_prefix("product:")?.parse().ok())
            .collect();
        let rank: HashMap<u64, usize> = top10
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i + 1))
            .collect();
        let products: Vec<Value> = search["products"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|p| {
                let id = p["id"].as_u64().unwrap_or(0);
                json!({
                    "id": id, "sku": p["sku"], "name": p["name"], "price": p["price"],
                    "rating": p["rating"], "popularity_rank": rank.get(&id).copied().unwrap_or(0),
                })
            })
            .collect();
        Ok(json!({
            "category": args.category,
            "total_found": search["total_found"],
            "products": products,
            "top10_popular_ids": top10,
            "server_type": "rust",
        })
        .to_string())
    }

    /// `get_user_cart`: the cart, then its history and its first product, in
    /// parallel.
    ///
    /// # Errors
    /// A backend's failure, in words.
    pub async fn get_user_cart(&self, args: CartArgs) -> Result<String, String> {
        let mut redis = self.redis.clone();
        let cart: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(format!("bench:cart:{}", args.user_id))
            .query_async(&mut redis)
            .await
            .map_err(|e| format!("HGETALL: {e}"))?;
        let items: Value = cart
            .get("items")
            .and_then(|items| serde_json::from_str(items).ok())
            .unwrap_or_else(|| json!([]));
        let first = items[0]["product_id"].as_u64().unwrap_or(1);
        let estimated_total: f64 = cart
            .get("total")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0.0);
        let history_key = format!("bench:history:{}", args.user_id);
        let history = async move {
            redis::cmd("LRANGE")
                .arg(history_key)
                .arg(0)
                .arg(4)
                .query_async::<Vec<String>>(&mut redis)
                .await
                .map_err(|e| e.to_string())
        };
        let product_path = format!("/products/{first}");
        let (history, product) = tokio::join!(history, self.get(&product_path));
        let history = history.map_err(failed("LRANGE"))?;
        product.map_err(failed("the product"))?;
        let recent: Vec<Value> = history
            .iter()
            .map(|e| serde_json::from_str(e).unwrap_or_else(|_| json!({"raw": e})))
            .collect();
        let count = items.as_array().map_or(0, Vec::len);
        Ok(json!({
            "user_id": args.user_id,
            "cart": {"items": items, "item_count": count, "estimated_total": estimated_total},
            "recent_history": recent,
            "server_type": "rust",
        })
        .to_string())
    }

    /// `checkout`: the priced cart and the Redis pipeline, in parallel.
    ///
    /// # Errors
    /// A backend's failure, in words.
    pub async fn checkout(&self, args: CheckoutArgs) -> Result<String, String> {
        let number: u64 = args
            .user_id
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(42);
        let rate_key = format!("bench:ratelimit:user-{:05}", number % 100);
        let history_key = format!("bench:history:{}", args.user_id);
        let product = args.items.first().map_or(42, |i| i.product_id);
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let items = json!(args.items);
        let entry = json!({
            "order_id": format!("ORD-{}-{ts}", args.user_id), "items": items, "ts": ts,
        })
        .to_string();
        let body = json!({"user_id": args.user_id, "items": items});
        let mut redis = self.redis.clone();
        let pipeline = async move {
            redis::pipe()
                .cmd("INCR")
                .arg(rate_key)
                .cmd("RPUSH")
                .arg(history_key)
                .arg(entry)
                .ignore()
                .cmd("ZADD")
                .arg("bench:popular")
                .arg("INCR")
                .arg(1)
                .arg(format!("product:{product}"))
                .ignore()
                .query_async::<(i64,)>(&mut redis)
                .await
                .map_err(|e| e.to_string())
        };
        let (priced, counted) = tokio::join!(self.post("/cart/calculate", &body), pipeline);
        let priced = priced.map_err(failed("the cart"))?;
        let (count,) = counted.map_err(failed("the pipeline"))?;
        Ok(json!({
            "order_id": priced["order_id"].as_str().unwrap_or("ORD-unknown"),
            "user_id": args.user_id,
            "total": priced["total"].as_f64().unwrap_or(0.0),
            "items_count": args.items.len(),
            "rate_limit_count": count,
            "status": "confirmed",
            "server_type": "rust",
        })
        .to_string())
    }

    /// Runs tool `name` with `arguments`: the text of its answer, or what
    /// failed (`Err`; an unknown tool or bad arguments too).
    ///
    /// # Errors
    /// As the tools', and an unknown tool or arguments that do not fit.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<String, String> {
        fn args<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
            serde_json::from_value(v).map_err(|e| format!("invalid arguments: {e}"))
        }
        match name {
            "search_products" => self.search_products(args(arguments)?).await,
            "get_user_cart" => self.get_user_cart(args(arguments)?).await,
            "checkout" => self.checkout(args(arguments)?).await,
            _ => Err(format!("no tool {name}")),
        }
    }
}
