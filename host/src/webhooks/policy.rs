//! Where callbacks may go. An API that posts to URLs its users give must not become their
//! way into the network it runs in: addresses that are not public (loopback, private,
//! link-local, shared, unique-local...) are refused unless `--webhook-allow` names the host or
//! a network holding the address. Checked at launch on the URL as written, and again at each
//! delivery on every address the name resolves to, which the request is then pinned to.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use url::Url;

/// The longest callback URL accepted.
const MAX_URL: usize = 2048;

/// `--webhook-allow`: hosts by name, and networks.
#[derive(Debug, Clone, Default)]
pub struct WebhookPolicy {
    hosts: Vec<String>,
    networks: Vec<IpNet>,
}

impl WebhookPolicy {
    /// Reads `--webhook-allow` entries: a CIDR (`10.0.0.0/8`), an address, or a host name.
    pub fn parse(entries: &[String]) -> anyhow::Result<WebhookPolicy> {
        let mut policy = WebhookPolicy::default();
        for entry in entries
            .iter()
            .map(|entry| entry.trim())
            .filter(|entry| !entry.is_empty())
        {
            if let Ok(network) = entry.parse::<IpNet>() {
                policy.networks.push(network);
            } else if let Ok(address) = entry.parse::<IpAddr>() {
                policy.networks.push(IpNet::from(address));
            } else if entry
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"-.".contains(&byte))
            {
                policy.hosts.push(entry.to_ascii_lowercase());
            } else {
                anyhow::bail!("--webhook-allow {entry:?} is neither a host, an address nor a CIDR");
            }
        }
        Ok(policy)
    }

    /// The URL, if a callback may name it: http or https, a host, no credentials, and no
    /// address that is not public unless allowed. A name is resolved only when delivering.
    pub fn check_url(&self, url: &str) -> Result<Url, String> {
        if url.len() > MAX_URL {
            return Err(format!("must be at most {MAX_URL} characters"));
        }
        let parsed = Url::parse(url).map_err(|error| format!("is not a URL: {error}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err("must be an http or https URL".into());
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err("must not carry credentials; verify the signature instead".into());
        }
        let host = parsed.host_str().ok_or("must name a host")?;
        if let Some(address) = literal_address(host)
            && !self.allows(host, address)
        {
            return Err(format!(
                "names {address}, which is not a public address; the server's \
                 --webhook-allow must name it for callbacks to go there"
            ));
        }
        Ok(parsed)
    }

    /// Where to connect for `url`: its host's first address, each of which must be allowed.
    pub async fn resolve(&self, url: &Url) -> Result<SocketAddr, String> {
        let host = url.host_str().ok_or("the URL names no host")?;
        let port = url.port_or_known_default().unwrap_or(80);
        let addresses: Vec<SocketAddr> = match literal_address(host) {
            Some(address) => vec![SocketAddr::new(address, port)],
            None => tokio::net::lookup_host((host, port))
                .await
                .map_err(|error| format!("cannot resolve {host}: {error}"))?
                .collect(),
        };
        if let Some(refused) = addresses
            .iter()
            .find(|address| !self.allows(host, address.ip()))
        {
            return Err(format!(
                "{host} resolves to {}, which is not a public address and not allowed",
                refused.ip()
            ));
        }
        addresses
            .first()
            .copied()
            .ok_or_else(|| format!("{host} resolves to no address"))
    }

    fn allows(&self, host: &str, address: IpAddr) -> bool {
        is_public(address)
            || self
                .hosts
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(host))
            || self
                .networks
                .iter()
                .any(|network| network.contains(&address))
    }
}

/// A host written as an address (`10.0.0.1`, `[::1]`).
fn literal_address(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Whether an address is on the public internet.
fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_go_unless_allowed() {
        let closed = WebhookPolicy::default();
        for url in [
            "http://127.0.0.1:9/hook",
            "http://10.1.2.3/",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:192.168.0.1]/",
            "http://100.64.0.1/",
        ] {
            assert!(closed.check_url(url).is_err(), "{url}");
        }
        assert!(closed.check_url("https://93.184.215.14/hook").is_ok());
        assert!(closed.check_url("https://hooks.example.com/x").is_ok());
        assert!(closed.check_url("ftp://example.com/").is_err());
        assert!(closed.check_url("http://user:pw@example.com/").is_err());

        let open = WebhookPolicy::parse(&["127.0.0.1".into(), "10.0.0.0/8".into()]).expect("valid");
        assert!(open.check_url("http://127.0.0.1:9/hook").is_ok());
        assert!(open.check_url("http://10.200.0.1/").is_ok());
        assert!(open.check_url("http://192.168.0.1/").is_err());
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_a_private_address_is_refused_at_delivery() {
        let closed = WebhookPolicy::default();
        let url = Url::parse("http://localhost:9/hook").expect("a URL");
        assert!(closed.resolve(&url).await.is_err());
        let named = WebhookPolicy::parse(&["localhost".into()]).expect("valid");
        assert!(named.resolve(&url).await.is_ok());
    }
}
