//! The API service of the I/O workload: 100,000 products built at start,
//! deterministically, served over HTTP by axum (`wymcp-bench io-api`).
//!
//! Its data and its three routes follow the public benchmark's API service
//! (its formulas and lists; the code is this crate's):
//!
//! * `GET /products/search?category=&min_price=&max_price=&limit=`: the
//!   products of a category within a price range, cheapest first (ties by
//!   id), `total_found` and the first `limit`;
//! * `GET /products/{id}`: one product, `404` outside `1..=100000`;
//! * `POST /cart/calculate`: subtotal, tax (8.5%), shipping (5.99, free with
//!   a 10% discount from 100), rounded to cents, and an order id.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde::{Deserialize, Serialize};

/// The catalog's size.
pub const PRODUCTS: usize = 100_000;

/// The twenty categories, product `i` in `CATEGORIES[i % 20]`.
pub const CATEGORIES: [&str; 20] = [
    "Electronics",
    "Books",
    "Clothing",
    "Sports",
    "Home",
    "Garden",
    "Toys",
    "Food",
    "Beauty",
    "Automotive",
    "Music",
    "Movies",
    "Games",
    "Office",
    "Health",
    "Pets",
    "Travel",
    "Tools",
    "Jewelry",
    "Baby",
];

/// The fifty brands, product `i` of `BRANDS[i % 50]`.
pub const BRANDS: [&str; 50] = [
    "Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta", "Theta", "Iota", "Kappa",
    "Lambda", "Mu", "Nu", "Xi", "Omicron", "Pi", "Rho", "Sigma", "Tau", "Upsilon", "Phi", "Chi",
    "Psi", "Omega", "Apex", "Nexus", "Vertex", "Zenith", "Nadir", "Flux", "Forge", "Craft",
    "Build", "Make", "Create", "Design", "Style", "Form", "Shape", "Mold", "Cast", "Weld", "Fuse",
    "Bond", "Link", "Chain", "Wire", "Mesh", "Weave", "Knit",
];

/// The tag pool: product `i` has `2 + i % 3` tags, tag `j` `TAGS[(i + j) % 8]`.
pub const TAGS: [&str; 8] = [
    "sale",
    "new",
    "featured",
    "bestseller",
    "clearance",
    "limited",
    "popular",
    "exclusive",
];

/// One product, serialised as the API service answers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Product {
    /// `i + 1`.
    pub id: u32,
    /// `SKU-%06d` of the id.
    pub sku: String,
    /// `{brand} {category} Item {id}`.
    pub name: String,
    /// `CATEGORIES[i % 20]`.
    pub category: &'static str,
    /// `BRANDS[i % 50]`.
    pub brand: &'static str,
    /// `1 + (i % 99900) / 100`.
    pub price: f64,
    /// `i % 501`.
    pub stock: i32,
    /// `1 + (i % 40) / 10`, a single-precision number as the original's.
    pub rating: f32,
    /// `2 + i % 3` tags of the pool.
    pub tags: Vec<&'static str>,
    /// `(1 + i % 100) × 0.1`, rounded to cents.
    pub weight: f64,
    /// `Quality {category} by {brand}. SKU %06d.`
    pub description: String,
}

/// `x` rounded to cents, halves away from zero.
#[must_use]
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

impl Product {
    /// Product `i` (0-based) of the catalog.
    #[must_use]
    pub fn nth(i: usize) -> Product {
        let category = CATEGORIES[i % 20];
        let brand = BRANDS[i % 50];
        let id = i + 1;
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        Product {
            id: u32::try_from(id).unwrap_or(u32::MAX),
            sku: format!("SKU-{id:06}"),
            name: format!("{brand} {category} Item {id}"),
            category,
            brand,
            price: 1.0 + (i % 99_900) as f64 / 100.0,
            stock: i32::try_from(i % 501).unwrap_or(0),
            rating: 1.0 + (i % 40) as f32 / 10.0,
            tags: (0..2 + i % 3).map(|j| TAGS[(i + j) % 8]).collect(),
            weight: round2((1 + i % 100) as f64 * 0.1),
            description: format!("Quality {category} by {brand}. SKU {id:06}."),
        }
    }
}

/// The catalog: every product, and each category's products in order.
#[derive(Debug)]
pub struct Catalog {
    products: Vec<Product>,
    by_category: HashMap<&'static str, Vec<u32>>,
}

/// What a search answers.
#[derive(Debug, Serialize)]
pub struct Search<'a> {
    /// The category searched.
    pub category: String,
    /// How many products matched.
    pub total_found: usize,
    /// The first `limit` of them, cheapest first.
    pub products: Vec<&'a Product>,
}

/// A search's parameters, as the query string gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Electronics when absent or empty.
    pub category: String,
    /// 0 when absent or not a number.
    pub min_price: f64,
    /// No bound when absent, 0 or not a number.
    pub max_price: f64,
    /// 10 when absent, not a number, 0 or over 1,000.
    pub limit: usize,
}

impl Query {
    /// Reads a query string (`category=Electronics&min_price=50&…`).
    #[must_use]
    pub fn parse(raw: &str) -> Query {
        let mut query = Query {
            category: String::new(),
            min_price: 0.0,
            max_price: 0.0,
            limit: 0,
        };
        for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
            match &*key {
                "category" => query.category = value.into_owned(),
                "min_price" => query.min_price = value.parse().unwrap_or(0.0),
                "max_price" => query.max_price = value.parse().unwrap_or(0.0),
                "limit" => query.limit = value.parse().unwrap_or(0),
                _ => {}
            }
        }
        if query.category.is_empty() {
            "Electronics".clone_into(&mut query.category);
        }
        if query.max_price == 0.0 {
            query.max_price = f64::MAX;
        }
        if query.limit == 0 || query.limit > 1000 {
            query.limit = 10;
        }
        query
    }
}

/// One item of a cart to price.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
pub struct CartItem {
    /// The product, 1 to 100,000 (others are skipped).
    pub product_id: i64,
    /// How many.
    pub quantity: i64,
}

/// A cart to price.
#[derive(Debug, Deserialize, Serialize)]
pub struct CartRequest {
    /// Whose cart.
    pub user_id: String,
    /// What is in it.
    pub items: Vec<CartItem>,
}

/// A priced cart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CartTotal {
    /// `ORD-{user id without dashes}-{items}`.
    pub order_id: String,
    /// Whose cart.
    pub user_id: String,
    /// Σ price × quantity, in cents.
    pub subtotal: f64,
    /// 8.5% of the subtotal.
    pub tax: f64,
    /// 5.99, or 0 from a subtotal of 100.
    pub shipping: f64,
    /// 10% of the subtotal from 100, else 0.
    pub discount: f64,
    /// subtotal + tax + shipping − discount.
    pub total: f64,
    /// How many items the cart had.
    pub items_count: usize,
}

impl Catalog {
    /// The 100,000 products.
    #[must_use]
    pub fn build() -> Catalog {
        let products: Vec<Product> = (0..PRODUCTS).map(Product::nth).collect();
        let mut by_category: HashMap<&'static str, Vec<u32>> = HashMap::new();
        for (i, product) in products.iter().enumerate() {
            by_category
                .entry(product.category)
                .or_default()
                .push(u32::try_from(i).unwrap_or(u32::MAX));
        }
        Catalog {
            products,
            by_category,
        }
    }

    /// Product `id` (1-based).
    #[must_use]
    pub fn product(&self, id: i64) -> Option<&Product> {
        let index = usize::try_from(id.checked_sub(1)?).ok()?;
        self.products.get(index)
    }

    /// The products of `query`'s category within its price range, cheapest
    /// first (ties by id), the first `limit` of them.
    #[must_use]
    pub fn search(&self, query: &Query) -> Search<'_> {
        let mut matching: Vec<&Product> = self
            .by_category
            .get(query.category.as_str())
            .map(|indices| {
                indices
                    .iter()
                    .filter_map(|&i| self.products.get(i as usize))
                    .filter(|p| p.price >= query.min_price && p.price <= query.max_price)
                    .collect()
            })
            .unwrap_or_default();
        matching.sort_by(|a, b| a.price.total_cmp(&b.price).then(a.id.cmp(&b.id)));
        let total_found = matching.len();
        matching.truncate(query.limit);
        Search {
            category: query.category.clone(),
            total_found,
            products: matching,
        }
    }

    /// Prices `cart`.
    #[must_use]
    pub fn calculate(&self, cart: &CartRequest) -> CartTotal {
        #[allow(clippy::cast_precision_loss)]
        let subtotal = round2(
            cart.items
                .iter()
                .filter_map(|item| {
                    let product = self.product(item.product_id)?;
                    Some(product.price * item.quantity as f64)
                })
                .sum(),
        );
        let tax = round2(subtotal * 0.085);
        let (shipping, discount) = if subtotal >= 100.0 {
            (0.0, round2(subtotal * 0.10))
        } else {
            (5.99, 0.0)
        };
        CartTotal {
            order_id: format!("ORD-{}-{}", cart.user_id.replace('-', ""), cart.items.len()),
            user_id: cart.user_id.clone(),
            subtotal,
            tax,
            shipping,
            discount,
            total: round2(subtotal + tax + shipping - discount),
            items_count: cart.items.len(),
        }
    }
}

fn json(value: &impl Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The API service's routes over `catalog`.
pub fn router(catalog: Arc<Catalog>) -> Router {
    Router::new()
        .route(
            "/products/search",
            axum::routing::get(
                |State(catalog): State<Arc<Catalog>>, RawQuery(raw): RawQuery| async move {
                    json(&catalog.search(&Query::parse(raw.as_deref().unwrap_or(""))))
                },
            ),
        )
        .route(
            "/products/{id}",
            axum::routing::get(
                |State(catalog): State<Arc<Catalog>>, Path(id): Path<String>| async move {
                    match id.parse().ok().and_then(|id| catalog.product(id)) {
                        Some(product) => json(product),
                        None => StatusCode::NOT_FOUND.into_response(),
                    }
                },
            ),
        )
        .route(
            "/cart/calculate",
            axum::routing::post(
                |State(catalog): State<Arc<Catalog>>, body: Bytes| async move {
                    match serde_json::from_slice::<CartRequest>(&body) {
                        Ok(cart) => json(&catalog.calculate(&cart)),
                        Err(_) => StatusCode::BAD_REQUEST.into_response(),
                    }
                },
            ),
        )
        .route(
            "/health",
            axum::routing::get(|| async { json(&serde_json::json!({"status": "ok"})) }),
        )
        .with_state(catalog)
}

/// Builds the catalog and serves it on `addr` (a multi-threaded runtime),
/// printing `listening on ADDR` once bound.
///
/// # Errors
/// When the runtime cannot be built or the listener fails.
pub fn serve(addr: std::net::SocketAddr) -> std::io::Result<()> {
    let catalog = Arc::new(Catalog::build());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        println!("listening on {}", listener.local_addr()?);
        axum::serve(listener, router(catalog)).await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(raw: &str) -> Query {
        Query::parse(raw)
    }

    #[test]
    fn the_benchmarks_search_finds_2251_electronics() {
        let catalog = Catalog::build();
        let found = catalog.search(&query(
            "category=Electronics&min_price=50&max_price=500&limit=10",
        ));
        assert_eq!(found.total_found, 2251);
        assert_eq!(found.products.len(), 10);
        // Cheapest first: product i = 4900 (id 4901) costs exactly 50.
        assert_eq!(found.products[0].id, 4901);
        assert!((found.products[0].price - 50.0).abs() < 1e-9);
        assert!(found.products.windows(2).all(|w| w[0].price <= w[1].price));
        assert!(found.products.iter().all(|p| p.category == "Electronics"));
    }

    #[test]
    fn a_products_fields_follow_the_formulas() {
        let p = Product::nth(41);
        assert_eq!(p.id, 42);
        assert_eq!(p.sku, "SKU-000042");
        assert_eq!(p.category, "Books");
        assert_eq!(p.brand, "Weld");
        assert_eq!(p.name, "Weld Books Item 42");
        assert!((p.price - 1.41).abs() < 1e-9);
        assert_eq!(p.stock, 41);
        assert!((p.rating - 1.1).abs() < 1e-6);
        assert_eq!(p.tags, ["new", "featured", "bestseller", "clearance"]);
        assert!((p.weight - 4.2).abs() < 1e-9);
        assert_eq!(p.description, "Quality Books by Weld. SKU 000042.");
        // The price wraps at 99,900; ids end at 100,000.
        assert!((Product::nth(99_900).price - 1.0).abs() < 1e-9);
        assert_eq!(Product::nth(99_999).id, 100_000);
    }

    #[test]
    fn a_product_serialises_as_the_original_does() {
        let text = serde_json::to_string(&Product::nth(0)).expect("serialises");
        assert_eq!(
            text,
            r#"{"id":1,"sku":"SKU-000001","name":"Alpha Electronics Item 1","category":"Electronics","brand":"Alpha","price":1.0,"stock":0,"rating":1.0,"tags":["sale","new"],"weight":0.1,"description":"Quality Electronics by Alpha. SKU 000001."}"#
        );
    }

    #[test]
    fn search_defaults_as_the_original() {
        let q = query("");
        assert_eq!(q.category, "Electronics");
        assert!((q.min_price - 0.0).abs() < f64::EPSILON);
        assert!((q.max_price - f64::MAX).abs() < f64::EPSILON);
        assert_eq!(q.limit, 10);
        assert_eq!(query("limit=5000").limit, 10);
        assert_eq!(query("limit=3").limit, 3);
        let catalog = Catalog::build();
        assert_eq!(catalog.search(&query("category=Nope")).total_found, 0);
        assert_eq!(catalog.search(&q).total_found, 5000);
    }

    #[test]
    fn the_benchmarks_checkout_is_priced_to_the_cent() {
        let catalog = Catalog::build();
        let cart = CartRequest {
            user_id: "user-00007".into(),
            items: vec![
                CartItem {
                    product_id: 42,
                    quantity: 2,
                },
                CartItem {
                    product_id: 1337,
                    quantity: 1,
                },
            ],
        };
        let total = catalog.calculate(&cart);
        // 1.41 × 2 + 14.36 = 17.18; tax 1.46; shipping 5.99.
        assert_eq!(
            total,
            CartTotal {
                order_id: "ORD-user00007-2".into(),
                user_id: "user-00007".into(),
                subtotal: 17.18,
                tax: 1.46,
                shipping: 5.99,
                discount: 0.0,
                total: 24.63,
                items_count: 2,
            }
        );
    }

    #[test]
    fn from_100_shipping_is_free_and_a_tenth_off() {
        let catalog = Catalog::build();
        // Product 10,000 costs 100.99; an unknown product is skipped.
        let cart = CartRequest {
            user_id: "u".into(),
            items: vec![
                CartItem {
                    product_id: 10_000,
                    quantity: 1,
                },
                CartItem {
                    product_id: 0,
                    quantity: 9,
                },
            ],
        };
        let total = catalog.calculate(&cart);
        assert!((total.subtotal - 100.99).abs() < 1e-9);
        assert!((total.tax - 8.58).abs() < 1e-9);
        assert!((total.shipping - 0.0).abs() < f64::EPSILON);
        assert!((total.discount - 10.10).abs() < 1e-9);
        assert!((total.total - 99.47).abs() < 1e-9);
        assert_eq!(total.items_count, 2);
    }
}
