//! Subnets for instance networks, from the home's address pool
//! (`config.yaml`'s `addressPool`, see [`jackin_api::home`]).
//!
//! A subnet is free when no network on the engine uses an overlapping one
//! and, for an engine on this host, no route of the host covers it (the
//! bridges of another engine on this host, a VPN). Which networks exist is
//! listed once and remembered, so converging many instances costs one list;
//! the list is taken again when it is old, and when the engine refuses a
//! subnet because another process took it meanwhile.
//!
//! Two processes can still pick the same subnet: the engine refuses the
//! second ("Pool overlaps"), which lists again and takes the next free one.
//! The search starts at a place derived from the network's name, so such
//! races are rare. A pool with no free subnet left is a permanent failure
//! whose message gives the figures and the setting to change.

use std::hash::{Hash, Hasher};
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use jackin_api::home::{self, HOME_CONFIG_FILE, HomeConfig, Pool, Subnet};

use crate::{Engine, EngineError};
use jackin_files::fsutil::read_regular;
use jackin_files::layout::cap;

/// How long a list of the engine's networks is trusted.
const LIST_TRUSTED_FOR: Duration = Duration::from_secs(30);

/// What the engine says when a subnet overlaps an existing network's.
const OVERLAP_MESSAGE: &str = "Pool overlaps";

#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    #[error(
        "no free /{size} subnet is left in jackin's address pool {base} ({in_use} of its {count} \
         are in use by networks on the engine or routes of this host): widen the pool in {config} \
         (for example `addressPool: {{base: 10.200.0.0/14, size: {size}}}`), or purge \
         instances you no longer need"
    )]
    Exhausted {
        base: Subnet,
        size: u8,
        count: u64,
        in_use: u64,
        config: String,
    },
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl AddressError {
    /// Exhaustion and a bad setting stay until the operator acts.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Exhausted { .. } | Self::Config(_))
    }
}

/// The home's settings: the defaults when `config.yaml` does not exist.
/// The operator may link it elsewhere (a dotfiles repository): the link is
/// followed, but only to a regular file within [`cap::CONFIG`], and no
/// error quotes what the file holds.
pub fn read_config(home: &Path) -> Result<HomeConfig, AddressError> {
    let path = home.join(HOME_CONFIG_FILE);
    let unusable = |why: String| AddressError::Config(format!("{}: {why}", path.display()));
    match read_regular(&path, cap::CONFIG) {
        Ok(bytes) => {
            let text =
                String::from_utf8(bytes).map_err(|_| unusable("it is not UTF-8 text".into()))?;
            home::parse(&path.display().to_string(), &text).map_err(AddressError::Config)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HomeConfig::default()),
        Err(e) => Err(unusable(e.to_string())),
    }
}

/// The subnets in use on one engine, as this process knows them: listed
/// from the engine, plus what this process has handed out since.
#[derive(Debug, Default)]
pub struct AddressBook {
    state: tokio::sync::Mutex<Book>,
}

#[derive(Debug, Default)]
struct Book {
    taken: Vec<Subnet>,
    listed_at: Option<Instant>,
}

impl AddressBook {
    /// Creates the network `name` on a free subnet of `home`'s pool. A
    /// subnet that another process took meanwhile is given up for the next
    /// free one.
    pub async fn create_network(
        &self,
        engine: &Engine,
        home: &Path,
        name: &str,
        labels: std::collections::HashMap<String, String>,
    ) -> Result<Subnet, AddressError> {
        let pool = read_config(home)?
            .address_pool
            .pool()
            .map_err(AddressError::Config)?;
        let mut relist = false;
        let config = home.join(HOME_CONFIG_FILE).display().to_string();
        loop {
            let subnet = self.reserve(engine, pool, name, relist, &config).await?;
            match engine
                .create_network(name, labels.clone(), Some(subnet.to_string()))
                .await
            {
                Ok(_) => return Ok(subnet),
                Err(EngineError::Refused { message, .. })
                    if message.contains(OVERLAP_MESSAGE) && !relist =>
                {
                    tracing::debug!(network = name, %subnet, "subnet taken meanwhile");
                    relist = true;
                }
                Err(e) => {
                    self.state.lock().await.taken.retain(|s| *s != subnet);
                    return Err(e.into());
                }
            }
        }
    }

    /// A free subnet of `pool`, marked taken. The search starts at a place
    /// that depends on `name`, so processes creating networks at once
    /// rarely pick the same one.
    async fn reserve(
        &self,
        engine: &Engine,
        pool: Pool,
        name: &str,
        relist: bool,
        config: &str,
    ) -> Result<Subnet, AddressError> {
        let mut book = self.state.lock().await;
        let stale = book
            .listed_at
            .is_none_or(|at| at.elapsed() > LIST_TRUSTED_FOR);
        if relist || stale {
            book.taken = in_use(engine).await?;
            book.listed_at = Some(Instant::now());
        }
        let found = match free(pool, &book.taken, name) {
            Some(subnet) => Some(subnet),
            // What was listed a while ago may have been freed since.
            None if !relist && !stale => {
                book.taken = in_use(engine).await?;
                book.listed_at = Some(Instant::now());
                free(pool, &book.taken, name)
            }
            None => None,
        };
        let Some(subnet) = found else {
            let in_use = (0..pool.count())
                .filter(|&i| book.taken.iter().any(|t| t.overlaps(pool.nth(i))))
                .count() as u64;
            return Err(AddressError::Exhausted {
                base: pool.base,
                size: pool.size,
                count: pool.count(),
                in_use,
                config: config.to_owned(),
            });
        };
        book.taken.push(subnet);
        Ok(subnet)
    }
}

/// The first subnet of `pool` that overlaps nothing in `taken`, searching
/// from a place that depends on `name`.
fn free(pool: Pool, taken: &[Subnet], name: &str) -> Option<Subnet> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut hasher);
    let start = hasher.finish();
    (0..pool.count())
        .map(|i| pool.nth(start.wrapping_add(i)))
        .find(|candidate| !taken.iter().any(|t| t.overlaps(*candidate)))
}

/// Every IPv4 subnet the engine's networks use and, when the engine runs
/// on this host, the host's routes.
async fn in_use(engine: &Engine) -> Result<Vec<Subnet>, EngineError> {
    let mut taken: Vec<Subnet> = engine
        .list_networks(&[])
        .await?
        .iter()
        .filter_map(|n| n.ipam.as_ref()?.config.as_ref())
        .flatten()
        .filter_map(|c| c.subnet.as_deref()?.parse().ok())
        .collect();
    if engine.endpoint().starts_with("unix://") {
        taken.extend(host_routes());
    }
    Ok(taken)
}

/// The destinations of this host's IPv4 routes, but the default route.
fn host_routes() -> Vec<Subnet> {
    std::fs::read_to_string("/proc/net/route")
        .map(|table| parse_routes(&table))
        .unwrap_or_default()
}

/// Reads `/proc/net/route`: hexadecimal destination and mask, in the
/// host's byte order (little-endian on every host jackin runs on).
fn parse_routes(table: &str) -> Vec<Subnet> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let destination = u32::from_str_radix(fields.get(1)?, 16).ok()?;
            let prefix = u32::from_str_radix(fields.get(7)?, 16).ok()?.count_ones() as u8;
            if prefix == 0 {
                return None;
            }
            Subnet::new(Ipv4Addr::from(destination.to_le_bytes()), prefix).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeEngine;

    fn pool(base: &str, size: u8) -> Pool {
        home::AddressPool {
            base: base.into(),
            size,
        }
        .pool()
        .unwrap()
    }

    #[test]
    fn routes_are_read_as_the_kernel_writes_them() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
                     docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n\
                     br-1\t10D50D0A\t00000000\t0001\t0\t0\t0\tF0FFFFFF\t0\t0\t0\n";
        let routes: Vec<String> = parse_routes(table).iter().map(Subnet::to_string).collect();
        assert_eq!(routes, ["172.17.0.0/16", "10.13.213.16/28"]);
    }

    #[test]
    fn a_free_subnet_skips_every_overlap() {
        let pool = pool("10.213.0.0/24", 28);
        let taken: Vec<Subnet> = (0..16)
            .filter(|i| i % 5 != 3)
            .map(|i| pool.nth(i))
            .collect();
        let found = free(pool, &taken, "any");
        assert!(
            matches!(found, Some(s) if s == pool.nth(3) || s == pool.nth(8) || s == pool.nth(13))
        );
        // A wide network elsewhere covers the whole pool.
        assert_eq!(free(pool, &["10.0.0.0/8".parse().unwrap()], "any"), None);
    }

    /// A home whose pool is `base` cut into /30s, an empty engine, and an
    /// address book that has listed nothing yet.
    fn a_home_with_pool(base: &str) -> (tempfile::TempDir, Engine, AddressBook) {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(HOME_CONFIG_FILE),
            format!("addressPool: {{base: {base}, size: 30}}\n"),
        )
        .unwrap();
        (home, FakeEngine::default().engine(), AddressBook::default())
    }

    #[tokio::test]
    async fn networks_get_distinct_subnets_until_the_pool_runs_out() {
        let (home, engine, book) = a_home_with_pool("10.99.0.0/28");
        let mut subnets = Vec::new();
        for i in 0..4 {
            let name = format!("net-{i}");
            subnets.push(
                book.create_network(&engine, home.path(), &name, Default::default())
                    .await
                    .unwrap(),
            );
        }
        subnets.sort();
        subnets.dedup();
        assert_eq!(subnets.len(), 4, "{subnets:?}");
        let err = book
            .create_network(&engine, home.path(), "net-4", Default::default())
            .await
            .unwrap_err();
        assert!(err.is_permanent());
        let message = err.to_string();
        assert!(
            message.contains("10.99.0.0/28") && message.contains("4 of its 4"),
            "{message}"
        );
        assert!(message.contains("config.yaml"), "{message}");
    }

    #[tokio::test]
    async fn a_subnet_taken_by_another_process_is_given_up_for_the_next() {
        let (home, engine, book) = a_home_with_pool("10.99.0.0/29");
        let first = book
            .create_network(&engine, home.path(), "a", Default::default())
            .await
            .unwrap();
        // Another process takes the other subnet behind this book's back.
        let both = pool("10.99.0.0/29", 30);
        let other = if first == both.nth(0) {
            both.nth(1)
        } else {
            both.nth(0)
        };
        engine
            .create_network("theirs", Default::default(), Some(other.to_string()))
            .await
            .unwrap();
        let err = book
            .create_network(&engine, home.path(), "b", Default::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, AddressError::Exhausted { in_use: 2, .. }),
            "{err}"
        );
    }
}
