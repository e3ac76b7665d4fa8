//! A home's own settings: `$JACKIN_HOME/config.yaml`, optional.
//!
//! ```yaml
//! addressPool:
//!   base: 10.213.0.0/16   # private IPv4 space jackin's networks come from
//!   size: 28              # the prefix length of each instance's subnet
//! discardRetention: 7d    # how long the work of a discarded checkout is kept
//! artifactRetention: 7d   # how long a session's collected artifacts are kept
//! portPool: {from: 40000, to: 40999}   # the host ports published ports get
//! runLogs:
//!   keep: 200             # the newest run logs kept under data/diagnostics/runs/
//!   retention: 14d        # and none older than this
//! ```
//!
//! Every instance has a bridge network of its own. Left to the engine, those
//! networks take their subnets from its default pools, which hold about 31
//! networks on a stock engine; jackin hands out small subnets of its own
//! pool instead, so an engine runs thousands of instances.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The file's name, in the home's root.
pub const HOME_CONFIG_FILE: &str = "config.yaml";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HomeConfig {
    #[serde(default)]
    pub address_pool: AddressPool,
    /// How long the unfinished work of a discarded checkout stays saved
    /// under `discarded/` before the sweeps remove it: `7d`, `36h`, `90m`
    /// (at least a second, at most 3650 days). Default 7 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard_retention: Option<String>,
    /// How long what a session left in `state/artifacts/`, collected under
    /// `artifacts/` when it ended, stays there before the sweeps remove it;
    /// written as `discardRetention` is. Default 7 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_retention: Option<String>,
    /// How many diagnostics run logs are kept, and for how long.
    #[serde(default, skip_serializing_if = "RunLogs::is_default")]
    pub run_logs: RunLogs,
    /// The host ports published ports are given from; 40000 to 40999 when
    /// omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_pool: Option<crate::ports::PortPool>,
}

impl HomeConfig {
    /// The host ports published ports are given from.
    pub fn port_pool(&self) -> crate::ports::PortPool {
        self.port_pool.clone().unwrap_or_default()
    }
}

/// The bounds of `data/diagnostics/runs/`: the sweeps remove the run logs
/// past either.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunLogs {
    /// The newest this many are kept (1 to 100000). Default 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<usize>,
    /// None older than this is kept, written as `discardRetention` is.
    /// Default 14 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<String>,
}

/// How many run logs are kept when `config.yaml` does not say.
pub const DEFAULT_RUN_LOGS_KEPT: usize = 200;

/// How long run logs are kept when `config.yaml` does not say.
pub const DEFAULT_RUN_LOG_RETENTION: std::time::Duration =
    std::time::Duration::from_secs(14 * 24 * 3600);

/// The most run logs a home may keep: each is a file in one directory.
const MAX_RUN_LOGS_KEPT: usize = 100_000;

impl RunLogs {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// How many are kept. A value out of range was refused by [`parse`].
    pub fn keep(&self) -> usize {
        self.keep.unwrap_or(DEFAULT_RUN_LOGS_KEPT)
    }

    /// How long they are kept. A value that does not parse was refused by
    /// [`parse`]; it reads as the default here.
    pub fn retention(&self) -> std::time::Duration {
        retention_or(self.retention.as_deref(), DEFAULT_RUN_LOG_RETENTION)
    }
}

/// How long discarded work is kept when `config.yaml` does not say.
pub const DEFAULT_DISCARD_RETENTION: std::time::Duration =
    std::time::Duration::from_secs(7 * 24 * 3600);

/// How long collected artifacts are kept when `config.yaml` does not say:
/// as long as discarded work.
pub const DEFAULT_ARTIFACT_RETENTION: std::time::Duration = DEFAULT_DISCARD_RETENTION;

/// The longest retention a home may set: ten years.
const MAX_RETENTION_SECS: u64 = 3650 * 24 * 3600;

impl HomeConfig {
    /// How long discarded work is kept. A value that does not parse was
    /// refused by [`parse`]; it reads as the default here.
    pub fn discard_retention(&self) -> std::time::Duration {
        retention_or(self.discard_retention.as_deref(), DEFAULT_DISCARD_RETENTION)
    }

    /// How long collected artifacts are kept, read as
    /// [`HomeConfig::discard_retention`] is.
    pub fn artifact_retention(&self) -> std::time::Duration {
        retention_or(
            self.artifact_retention.as_deref(),
            DEFAULT_ARTIFACT_RETENTION,
        )
    }
}

/// A retention as written, or `default` when it is not: a value that does
/// not parse was refused by [`parse`].
fn retention_or(text: Option<&str>, default: std::time::Duration) -> std::time::Duration {
    text.and_then(|text| retention(text).ok())
        .unwrap_or(default)
}

/// A retention: whole days (`7d`, `30 days`), or a duration as every other
/// duration in jackin is written (`36h`, `90m`, `1h30m`, `45s`), from one
/// second to ten years.
pub fn retention(text: &str) -> Result<std::time::Duration, String> {
    let expected = "expected e.g. 7d, 36h or 90m (at least 1s, at most 3650d)";
    let text = text.trim();
    let days = ["days", "day", "d"]
        .iter()
        .find_map(|unit| text.strip_suffix(unit))
        .and_then(|n| n.trim_end().parse::<u64>().ok());
    let seconds = match days {
        Some(days) => days.checked_mul(24 * 3600),
        None => match text.parse::<jiff::SignedDuration>() {
            Ok(d) if d.is_negative() => return Err(format!("{text:?} is negative: {expected}")),
            Ok(d) => u64::try_from(d.as_secs()).ok(),
            Err(_) => match text.parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => return Err(format!("{text:?} is not a retention: {expected}")),
            },
        },
    };
    match seconds {
        Some(0) => Err(format!("{text:?} is under a second: {expected}")),
        Some(s) if s <= MAX_RETENTION_SECS => Ok(std::time::Duration::from_secs(s)),
        _ => Err(format!("{text:?} is too long: {expected}")),
    }
}

/// Where instance networks take their subnets from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddressPool {
    /// An IPv4 range in CIDR notation.
    pub base: String,
    /// The prefix length of each subnet taken from it.
    pub size: u8,
}

impl Default for AddressPool {
    fn default() -> Self {
        Self {
            base: "10.213.0.0/16".into(),
            size: 28,
        }
    }
}

/// An IPv4 network: an address and a prefix length, the host bits zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Subnet {
    addr: u32,
    prefix: u8,
}

impl Subnet {
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Result<Self, String> {
        if prefix > 32 {
            return Err(format!("prefix length /{prefix} is over 32"));
        }
        let subnet = Self {
            addr: u32::from(addr),
            prefix,
        };
        if subnet.addr & !subnet.mask() != 0 {
            return Err(format!(
                "{addr}/{prefix} has host bits set: the network is {}",
                Self {
                    addr: subnet.addr & subnet.mask(),
                    prefix
                }
            ));
        }
        Ok(subnet)
    }

    fn mask(self) -> u32 {
        u32::MAX
            .checked_shl(32 - u32::from(self.prefix))
            .unwrap_or(0)
    }

    pub fn prefix(self) -> u8 {
        self.prefix
    }

    fn last(self) -> u32 {
        self.addr | !self.mask()
    }

    pub fn overlaps(self, other: Self) -> bool {
        self.addr <= other.last() && other.addr <= self.last()
    }

    pub fn contains(self, other: Self) -> bool {
        self.addr <= other.addr && other.last() <= self.last()
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.addr), self.prefix)
    }
}

impl FromStr for Subnet {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (addr, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not in CIDR notation (ADDRESS/PREFIX)"))?;
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("{addr:?} is not an IPv4 address"))?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| format!("{prefix:?} is not a prefix length"))?;
        Self::new(addr, prefix)
    }
}

/// A validated [`AddressPool`]: `base` cut into subnets of `/size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool {
    pub base: Subnet,
    pub size: u8,
}

/// The smallest subnet a pool may hand out: a /30 holds a gateway and
/// one container, which is all an instance without sidecars needs.
pub const SMALLEST_SUBNET: u8 = 30;

impl Pool {
    pub fn count(self) -> u64 {
        1u64 << (self.size - self.base.prefix)
    }

    /// The `i`th subnet, `i` taken modulo [`Pool::count`].
    pub fn nth(self, i: u64) -> Subnet {
        let step = 1u64 << (32 - u32::from(self.size));
        let offset = (i % self.count()) * step;
        Subnet {
            addr: self.base.addr + u32::try_from(offset).expect("within an IPv4 range"),
            prefix: self.size,
        }
    }
}

impl AddressPool {
    /// Checks the pool: private IPv4 space, cut into subnets no smaller
    /// than [`SMALLEST_SUBNET`].
    pub fn pool(&self) -> Result<Pool, String> {
        let base: Subnet = self.base.parse()?;
        let private = [
            "10.0.0.0/8",
            "172.16.0.0/12",
            "192.168.0.0/16",
            "100.64.0.0/10",
        ]
        .map(|s| s.parse::<Subnet>().expect("a valid literal"));
        if !private.iter().any(|p| p.contains(base)) {
            return Err(format!(
                "base {base} is not private address space (10.0.0.0/8, 172.16.0.0/12, \
                 192.168.0.0/16 or 100.64.0.0/10)"
            ));
        }
        if self.size < base.prefix || self.size > SMALLEST_SUBNET {
            return Err(format!(
                "size /{} must lie between the base's /{} and /{SMALLEST_SUBNET}",
                self.size, base.prefix
            ));
        }
        Ok(Pool {
            base,
            size: self.size,
        })
    }
}

/// Reads a home's settings; the error names `source`, and the line, column
/// or field at fault.
pub fn parse(source: &str, text: &str) -> Result<HomeConfig, String> {
    // The file may be a link the operator made: its errors say where, never
    // what it holds.
    let config: Option<HomeConfig> = serde_saphyr::from_str(text).map_err(|e| {
        format!(
            "{source}: {}",
            crate::redact::without_values(&e.without_snippet().to_string())
        )
    })?;
    let config = config.unwrap_or_default();
    config
        .address_pool
        .pool()
        .map_err(|e| format!("{source}: addressPool: {e}"))?;
    config
        .port_pool()
        .check()
        .map_err(|e| format!("{source}: {e}"))?;
    if let Some(text) = &config.discard_retention {
        retention(text).map_err(|e| format!("{source}: discardRetention: {e}"))?;
    }
    if let Some(text) = &config.artifact_retention {
        retention(text).map_err(|e| format!("{source}: artifactRetention: {e}"))?;
    }
    if let Some(text) = &config.run_logs.retention {
        retention(text).map_err(|e| format!("{source}: runLogs.retention: {e}"))?;
    }
    if let Some(keep) = config.run_logs.keep
        && !(1..=MAX_RUN_LOGS_KEPT).contains(&keep)
    {
        return Err(format!(
            "{source}: runLogs.keep: {keep} is out of range: expected 1 to {MAX_RUN_LOGS_KEPT}"
        ));
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subnet(text: &str) -> Subnet {
        text.parse().unwrap()
    }

    #[test]
    fn the_default_pool_holds_4096_subnets_of_14_hosts() {
        let pool = AddressPool::default().pool().unwrap();
        assert_eq!(pool.count(), 4096);
        assert_eq!(pool.nth(0).to_string(), "10.213.0.0/28");
        assert_eq!(pool.nth(1).to_string(), "10.213.0.16/28");
        assert_eq!(pool.nth(4095).to_string(), "10.213.255.240/28");
        assert_eq!(pool.nth(4096), pool.nth(0));
    }

    #[test]
    fn overlap_is_any_shared_address() {
        assert!(subnet("10.213.0.0/16").overlaps(subnet("10.213.7.16/28")));
        assert!(subnet("10.213.7.16/28").overlaps(subnet("10.213.0.0/16")));
        assert!(!subnet("10.213.7.16/28").overlaps(subnet("10.213.7.32/28")));
        assert!(subnet("0.0.0.0/0").overlaps(subnet("10.0.0.0/8")));
        assert!(subnet("10.0.0.0/8").contains(subnet("10.213.7.16/28")));
    }

    #[test]
    fn bad_pools_say_what_is_wrong() {
        let pool = |base: &str, size| {
            AddressPool {
                base: base.into(),
                size,
            }
            .pool()
            .unwrap_err()
        };
        assert!(
            pool("10.213.0.1/16", 28).contains("host bits"),
            "{}",
            pool("10.213.0.1/16", 28)
        );
        assert!(pool("8.8.0.0/16", 28).contains("not private"));
        assert!(pool("10.213.0.0/16", 31).contains("between"));
        assert!(pool("10.213.0.0/16", 8).contains("between"));
        assert!(pool("10.213.0.0", 28).contains("CIDR"));
        let err = parse(
            "config.yaml",
            "addressPool:\n  base: 10.0.0.0/8\n  sise: 28\n",
        )
        .unwrap_err();
        // Where, and what was expected; not the file's own text.
        assert!(
            err.contains("config.yaml") && err.contains("line 3") && !err.contains("sise"),
            "{err}"
        );
        let err = parse("config.yaml", "addressPool: {base: 10.0.0.0/8, size: 31}\n").unwrap_err();
        assert!(err.contains("addressPool") && err.contains("/31"), "{err}");
    }

    #[test]
    fn run_logs_are_bounded_by_a_count_and_an_age() {
        let config = HomeConfig::default();
        assert_eq!(config.run_logs.keep(), DEFAULT_RUN_LOGS_KEPT);
        assert_eq!(config.run_logs.retention(), DEFAULT_RUN_LOG_RETENTION);
        let config = parse("c", "runLogs:\n  keep: 5\n  retention: 2h\n").unwrap();
        assert_eq!(config.run_logs.keep(), 5);
        assert_eq!(
            config.run_logs.retention(),
            std::time::Duration::from_secs(7200)
        );
        let err = parse("c", "runLogs: {keep: 0}\n").unwrap_err();
        assert!(err.contains("runLogs.keep"), "{err}");
        let err = parse("c", "runLogs: {retention: soon}\n").unwrap_err();
        assert!(err.contains("runLogs.retention"), "{err}");
    }

    #[test]
    fn a_discard_retention_is_days_or_a_duration() {
        let days = |n: u64| std::time::Duration::from_secs(n * 24 * 3600);
        assert_eq!(retention("7d"), Ok(days(7)));
        assert_eq!(retention("30 days"), Ok(days(30)));
        assert_eq!(
            retention("36h"),
            Ok(std::time::Duration::from_secs(36 * 3600))
        );
        assert_eq!(retention("2s"), Ok(std::time::Duration::from_secs(2)));
        assert_eq!(retention("90"), Ok(std::time::Duration::from_secs(90)));
        assert!(retention("0d").unwrap_err().contains("under a second"));
        assert!(retention("3651d").unwrap_err().contains("too long"));
        assert!(retention("soon").unwrap_err().contains("not a retention"));
        assert!(retention("-5m").unwrap_err().contains("negative"));
        assert_eq!(HomeConfig::default().discard_retention(), days(7));
        let config = parse("c", "discardRetention: 2d\n").unwrap();
        assert_eq!(config.discard_retention(), days(2));
        let err = parse("config.yaml", "discardRetention: forever\n").unwrap_err();
        assert!(err.contains("discardRetention"), "{err}");
    }

    #[test]
    fn an_artifact_retention_is_read_and_checked_as_a_discard_retention_is() {
        let days = |n: u64| std::time::Duration::from_secs(n * 24 * 3600);
        assert_eq!(HomeConfig::default().artifact_retention(), days(7));
        let config = parse("c", "artifactRetention: 3d\ndiscardRetention: 2d\n").unwrap();
        assert_eq!(config.artifact_retention(), days(3));
        assert_eq!(config.discard_retention(), days(2));
        let err = parse("config.yaml", "artifactRetention: forever\n").unwrap_err();
        assert!(
            err.contains("config.yaml: artifactRetention") && err.contains("not a retention"),
            "{err}"
        );
        let err = parse("config.yaml", "artifactRetention: 0s\n").unwrap_err();
        assert!(err.contains("artifactRetention"), "{err}");
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        assert_eq!(parse("config.yaml", "").unwrap(), HomeConfig::default());
        let config = parse("c", "addressPool: {base: 192.168.64.0/20, size: 29}\n").unwrap();
        assert_eq!(config.address_pool.pool().unwrap().count(), 512);
    }
}
