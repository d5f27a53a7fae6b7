//! A generated WebShop catalog for machines without `WEBSHOP_DATA`: products with categories,
//! breadcrumbs, attributes, options, prices and synthetic instructions in the formats of the
//! real data, built by our own code from small word lists (no real data is embedded).

use std::io::Write;
use std::path::Path;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::webshop::catalog::{
    Catalog, INSTRUCTIONS_FILE, PRODUCTS_FILE, Product, TITLE_NOUNS_FILE, parse_price,
};

/// One product family: where it lives and what it can be.
struct Family {
    category: &'static str,
    breadcrumb: &'static str,
    query: &'static str,
    nouns: &'static [&'static str],
    attributes: &'static [&'static str],
    options: &'static [(&'static str, &'static [&'static str])],
    price: (f64, f64),
}

const COLORS: &[&str] = &[
    "black", "white", "navy", "red", "grey", "beige", "green", "pink", "blue", "olive",
];
const SIZES: &[&str] = &["small", "medium", "large", "x-large", "xx-large"];

const FAMILIES: &[Family] = &[
    Family {
        category: "fashion",
        breadcrumb: "Clothing, Shoes & Jewelry › Men › Clothing › Jeans",
        query: "men's jeans",
        nouns: &["jeans", "denim", "pants"],
        attributes: &[
            "straight leg",
            "machine washable",
            "slim fit",
            "button closure",
            "stretch fabric",
        ],
        options: &[
            ("color", COLORS),
            (
                "size",
                &[
                    "30w x 30l",
                    "32w x 30l",
                    "32w x 32l",
                    "34w x 32l",
                    "36w x 32l",
                ],
            ),
        ],
        price: (19.0, 89.0),
    },
    Family {
        category: "fashion",
        breadcrumb: "Clothing, Shoes & Jewelry › Women › Clothing › Tops, Tees & Blouses",
        query: "women's tops, tees & blouses",
        nouns: &["blouse", "tee", "tunic", "top"],
        attributes: &[
            "short sleeve",
            "long sleeve",
            "loose fit",
            "machine wash",
            "soft material",
        ],
        options: &[("color", COLORS), ("size", SIZES)],
        price: (9.0, 49.0),
    },
    Family {
        category: "fashion",
        breadcrumb: "Clothing, Shoes & Jewelry › Men › Shoes › Athletic",
        query: "men's running shoes",
        nouns: &["sneakers", "shoes", "trainers"],
        attributes: &[
            "non slip",
            "rubber sole",
            "lace up",
            "lightweight",
            "arch support",
        ],
        options: &[("color", COLORS), ("size", &["8", "9", "10", "11", "12"])],
        price: (29.0, 129.0),
    },
    Family {
        category: "beauty",
        breadcrumb: "Beauty & Personal Care › Skin Care › Face › Creams & Moisturizers",
        query: "face moisturizer",
        nouns: &["moisturizer", "cream", "lotion"],
        attributes: &[
            "fragrance free",
            "paraben free",
            "natural ingredients",
            "sensitive skin",
            "hyaluronic acid",
        ],
        options: &[("size", &["1.7 fl oz", "3.4 fl oz", "6.8 fl oz"])],
        price: (8.0, 59.0),
    },
    Family {
        category: "beauty",
        breadcrumb: "Beauty & Personal Care › Hair Care › Shampoo & Conditioner",
        query: "shampoo",
        nouns: &["shampoo", "conditioner", "hair wash"],
        attributes: &[
            "sulfate free",
            "tea tree",
            "dry hair",
            "cruelty free",
            "argan oil",
        ],
        options: &[
            ("scent", &["mint", "coconut", "lavender", "unscented"]),
            ("size", &["8 oz", "16 oz", "32 oz"]),
        ],
        price: (6.0, 39.0),
    },
    Family {
        category: "electronics",
        breadcrumb: "Electronics › Headphones, Earbuds & Accessories › Earbuds",
        query: "wireless earbuds",
        nouns: &["earbuds", "headphones", "earphones"],
        attributes: &[
            "noise cancelling",
            "bluetooth 5.0",
            "long battery life",
            "water resistant",
            "fast charging",
        ],
        options: &[("color", &["black", "white", "blue", "pink"])],
        price: (15.0, 149.0),
    },
    Family {
        category: "electronics",
        breadcrumb: "Electronics › Computers & Accessories › Cables › USB Cables",
        query: "usb c cable",
        nouns: &["cable", "charger cord", "adapter"],
        attributes: &[
            "fast charging",
            "braided nylon",
            "high speed",
            "usb c",
            "durable",
        ],
        options: &[
            ("size", &["3 ft", "6 ft", "10 ft"]),
            ("color", &["black", "white", "grey"]),
        ],
        price: (5.0, 25.0),
    },
    Family {
        category: "garden",
        breadcrumb: "Home & Kitchen › Furniture › Living Room Furniture › Tables",
        query: "coffee tables",
        nouns: &["table", "coffee table", "side table"],
        attributes: &[
            "solid wood",
            "easy assembly",
            "storage space",
            "living room",
            "mid century",
        ],
        options: &[("color", &["walnut", "oak", "black", "white"])],
        price: (49.0, 399.0),
    },
    Family {
        category: "garden",
        breadcrumb: "Home & Kitchen › Bedding › Blankets & Throws",
        query: "throw blankets",
        nouns: &["blanket", "throw", "quilt"],
        attributes: &[
            "machine washable",
            "super soft",
            "lightweight",
            "fleece",
            "all season",
        ],
        options: &[
            ("color", COLORS),
            ("size", &["throw", "twin", "queen", "king"]),
        ],
        price: (14.0, 79.0),
    },
    Family {
        category: "grocery",
        breadcrumb: "Grocery & Gourmet Food › Snacks & Sweets › Cookies",
        query: "cookies",
        nouns: &["cookies", "biscuits", "snack bars"],
        attributes: &[
            "gluten free",
            "low sugar",
            "non gmo",
            "individually wrapped",
            "high protein",
        ],
        options: &[
            (
                "flavor name",
                &["chocolate chip", "oatmeal", "peanut butter", "lemon"],
            ),
            ("size", &["6 count", "12 count", "24 count"]),
        ],
        price: (4.0, 29.0),
    },
    Family {
        category: "grocery",
        breadcrumb: "Grocery & Gourmet Food › Beverages › Coffee",
        query: "ground coffee",
        nouns: &["coffee", "espresso", "coffee beans"],
        attributes: &[
            "medium roast",
            "dark roast",
            "fair trade",
            "organic",
            "whole bean",
        ],
        options: &[("size", &["12 ounce", "2 pound", "5 pound"])],
        price: (7.0, 45.0),
    },
];

const BRAND_SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ra", "ven", "tor", "zu", "bel", "nor", "qui", "sa", "dex",
];
const EXTRAS: &[&str] = &[
    "for Everyday Use",
    "Gift Set",
    "Premium Edition",
    "Value Pack",
    "New Model",
];

/// Generates a catalog with the real data's shapes.
#[derive(Debug, Clone)]
pub struct CatalogGenerator {
    seed: u64,
}

/// A generated product with the extra fields of the raw files.
struct Generated {
    product: Product,
    nouns: Vec<String>,
    pricing: String,
    options: Vec<(String, Vec<String>)>,
}

impl CatalogGenerator {
    /// A generator; the same seed gives the same catalog.
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }

    fn product(&self, index: usize) -> Generated {
        let mut rng = ChaCha8Rng::seed_from_u64(
            self.seed
                .wrapping_mul(0x9E37_79B9)
                .wrapping_add(index as u64),
        );
        let family = &FAMILIES[index % FAMILIES.len()];
        let brand: String = (0..rng.random_range(2..4))
            .map(|_| *BRAND_SYLLABLES.choose(&mut rng).unwrap_or(&"ka"))
            .collect();
        let brand = capitalize(&brand);
        let noun = *family.nouns.choose(&mut rng).unwrap_or(&"item");
        let attributes: Vec<String> = family
            .attributes
            .choose_multiple(&mut rng, 3)
            .map(|a| a.to_string())
            .collect();
        let extra = *EXTRAS.choose(&mut rng).unwrap_or(&"");
        let title = format!(
            "{brand} {} {} {extra}",
            title_case(&attributes[0]),
            title_case(noun)
        );
        let nouns: Vec<String> = title
            .split_whitespace()
            .map(str::to_lowercase)
            .filter(|w| {
                family.nouns.iter().any(|n| n.split(' ').any(|p| p == w))
                    || *w == brand.to_lowercase()
            })
            .collect();
        let (lo, hi) = family.price;
        let p0 = (rng.random_range(lo..hi) * 100.0).round() / 100.0;
        let pricing = if rng.random_bool(0.1) {
            let p1 = ((p0 + rng.random_range(1.0..20.0)) * 100.0).round() / 100.0;
            format!("${p0} - ${p1}")
        } else {
            format!("${p0}")
        };
        let (prices, price_text) = parse_price(&pricing).unwrap_or((vec![100.0], "$100.0".into()));
        let mut options: Vec<(String, Vec<String>)> = Vec::new();
        for (name, values) in family.options {
            if rng.random_bool(0.8) {
                let k = rng.random_range(2..=values.len().min(5));
                let chosen = values.choose_multiple(&mut rng, k).map(|v| v.to_string());
                options.push((name.to_string(), chosen.collect()));
            }
        }
        let instructed = rng.random_bool(0.45);
        let instruction_attributes: Vec<String> = attributes[..rng.random_range(1..=2)].to_vec();
        let instruction = format!(
            "Find me {} {}",
            instruction_attributes.join(", "),
            family.query
        );
        let asin = format!("G{:09}", index);
        let description = format!(
            "The {brand} {noun} is {}. Designed for {}.",
            attributes.join(", "),
            family.query
        );
        let bullet_points = attributes
            .iter()
            .map(|a| format!("{}: {}", title_case(a), description_phrase(a)))
            .collect();
        Generated {
            product: Product {
                asin,
                title,
                description,
                bullet_points,
                query: family.query.to_string(),
                category: family.category.to_string(),
                product_category: family.breadcrumb.to_string(),
                pricing: prices,
                price_text,
                options: options.clone(),
                attributes,
                instruction_text: instructed.then_some(instruction),
                instruction_attributes: instructed.then_some(instruction_attributes),
                main_image: "https://example.invalid/image.jpg".into(),
            },
            nouns,
            pricing,
            options,
        }
    }

    /// A catalog of `n` products, with its title-noun table.
    pub fn catalog(&self, n: usize) -> Catalog {
        let mut catalog = Catalog::default();
        for i in 0..n {
            let g = self.product(i);
            catalog.by_asin.insert(g.product.asin.clone(), i);
            catalog.title_nouns.insert(g.product.asin.clone(), g.nouns);
            catalog.products.push(g.product);
        }
        catalog
    }

    /// Writes `n` products in the official file formats (`items_shuffle_1000.json`,
    /// `items_ins_v2_1000.json`, `title_nouns.json`) into `dir`, streaming the products file.
    ///
    /// # Errors
    /// [`Error::Catalog`] when a file cannot be written.
    pub fn write_dir(&self, dir: &Path, n: usize) -> Result<()> {
        let fail = |path: &Path, e: std::io::Error| Error::Catalog {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
        let products_path = dir.join(PRODUCTS_FILE);
        let file = std::fs::File::create(&products_path).map_err(|e| fail(&products_path, e))?;
        let mut out = std::io::BufWriter::new(file);
        let mut ins = serde_json::Map::new();
        let mut nouns = serde_json::Map::new();
        let write = |out: &mut std::io::BufWriter<std::fs::File>, bytes: &[u8]| {
            out.write_all(bytes).map_err(|e| fail(&products_path, e))
        };
        write(&mut out, b"[")?;
        for i in 0..n {
            let g = self.product(i);
            let p = &g.product;
            let mut raw = serde_json::json!({
                "name": p.title,
                "full_description": p.description,
                "pricing": g.pricing,
                "images": [p.main_image],
                "product_category": p.product_category,
                "average_rating": "",
                "small_description": p.bullet_points,
                "customization_options": "",
                "asin": p.asin,
                "category": p.category,
                "query": p.query,
            })
            .to_string();
            if !g.options.is_empty() {
                // Written by hand: the group order is significant and a JSON map would sort it.
                let groups: Vec<String> = g
                    .options
                    .iter()
                    .map(|(name, values)| {
                        let entries: Vec<serde_json::Value> = values
                            .iter()
                            .map(|v| serde_json::json!({"value": v}))
                            .collect();
                        format!(
                            "{}: {}",
                            serde_json::json!(name),
                            serde_json::json!(entries)
                        )
                    })
                    .collect();
                raw = raw.replace(
                    "\"customization_options\":\"\"",
                    &format!("\"customization_options\":{{{}}}", groups.join(", ")),
                );
            }
            if i > 0 {
                write(&mut out, b",")?;
            }
            write(&mut out, raw.as_bytes())?;
            let mut entry = serde_json::json!({"attributes": p.attributes});
            if let (Some(text), Some(attrs)) = (&p.instruction_text, &p.instruction_attributes) {
                entry["instruction"] = serde_json::json!(text);
                entry["instruction_attributes"] = serde_json::json!(attrs);
            }
            ins.insert(p.asin.clone(), entry);
            nouns.insert(p.asin.clone(), serde_json::json!(g.nouns));
        }
        write(&mut out, b"]")?;
        out.flush().map_err(|e| fail(&products_path, e))?;
        for (name, value) in [(INSTRUCTIONS_FILE, ins), (TITLE_NOUNS_FILE, nouns)] {
            let path = dir.join(name);
            let text = serde_json::Value::Object(value).to_string();
            std::fs::write(&path, text).map_err(|e| fail(&path, e))?;
        }
        Ok(())
    }
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn title_case(phrase: &str) -> String {
    phrase
        .split(' ')
        .map(capitalize)
        .collect::<Vec<_>>()
        .join(" ")
}

fn description_phrase(attribute: &str) -> String {
    format!("made to be {attribute} for daily comfort and reliable use")
}
