//! Where callbacks may go. An API that posts to URLs its users give must not become their
//! way into the network it runs in: addresses that are not public (loopback, private,
//! link-local, shared, unique-local...) are refused unless `--webhook-allow` names the host or
//! a network holding the address. Checked at launch on the URL as written, and again at each
//! delivery on every address the name resolves to, which the request is then pinned to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

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

/// Whether an address is on the public internet. An IPv6 address that carries an IPv4 one
/// (see [`embedded_ipv4`]) is judged by the IPv4 address, where its packets end up.
fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
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
                // IETF protocol assignments (RFC 6890) and the old 6to4 relay anycast
                // (RFC 7526): neither is an internet host's.
                || (a == 192 && b == 0 && c == 0)
                || (a == 192 && b == 88 && c == 99)
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_ipv4(v6) {
                return is_public(IpAddr::V4(v4));
            }
            let [first, second, third, fourth, ..] = v6.segments();
            !(v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                // Site-local (RFC 3879, deprecated but still routed inside sites).
                || (first & 0xffc0) == 0xfec0
                // Discard-only (RFC 6666).
                || (first == 0x0100 && second == 0 && third == 0 && fourth == 0)
                // Documentation (RFC 3849).
                || (first == 0x2001 && second == 0x0db8)
                // NAT64 for a local network (RFC 8215): its translator is the operator's, and
                // where it leads cannot be read from the address.
                || (first == 0x0064 && second == 0xff9b && third == 0x0001))
        }
    }
}

/// The IPv4 address an IPv6 address leads to, in the forms that carry one: IPv4-compatible
/// `::a.b.c.d` (which also holds `::` and `::1`), IPv4-mapped `::ffff:a.b.c.d`,
/// IPv4-translated `::ffff:0:a.b.c.d` (RFC 2765), NAT64's well-known prefix
/// `64:ff9b::/96` (RFC 6052), 6to4 `2002:AABB:CCDD::/48` (RFC 3056) and Teredo
/// `2001:0:...` (RFC 4380, whose last 32 bits are the client's address inverted).
fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let from = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    match v6.segments() {
        [0, 0, 0, 0, 0, 0 | 0xffff, high, low]
        | [0, 0, 0, 0, 0xffff, 0, high, low]
        | [0x0064, 0xff9b, 0, 0, 0, 0, high, low] => Some(from(high, low)),
        [0x2002, high, low, ..] => Some(from(high, low)),
        [0x2001, 0, .., high, low] => Some(from(!high, !low)),
        _ => None,
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
            "http://192.0.0.170/",
            "http://192.88.99.1/",
            "http://[fec0::1]/",
            "http://[100::1]/",
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

    /// A URL whose host is `v4` written in each IPv6 form that carries an IPv4 address.
    fn embedding_forms(v4: Ipv4Addr) -> Vec<(&'static str, String)> {
        let bits = u32::from(v4);
        let (high, low) = (bits >> 16, bits & 0xffff);
        let (teredo_high, teredo_low) = (!high & 0xffff, !low & 0xffff);
        vec![
            ("IPv4-compatible", format!("http://[::{v4}]/hook")),
            ("IPv4-mapped", format!("http://[::ffff:{v4}]/hook")),
            ("IPv4-translated", format!("http://[::ffff:0:{v4}]/hook")),
            ("NAT64", format!("http://[64:ff9b::{v4}]/hook")),
            ("6to4", format!("http://[2002:{high:x}:{low:x}::1]/hook")),
            (
                "Teredo",
                format!("http://[2001:0:4136:e378:8000:63bf:{teredo_high:x}:{teredo_low:x}]/hook"),
            ),
        ]
    }

    #[test]
    fn an_ipv4_address_inside_an_ipv6_one_is_judged_as_itself() {
        let closed = WebhookPolicy::default();
        let check = |v4: &str, allowed: bool| {
            for (form, url) in embedding_forms(v4.parse().expect("an IPv4 address")) {
                assert_eq!(
                    closed.check_url(&url).is_ok(),
                    allowed,
                    "{form} of {v4}: {url}"
                );
                // A name that resolves to it is judged alike at delivery.
                let address =
                    literal_address(Url::parse(&url).expect("a URL").host_str().expect("a host"))
                        .expect("an address");
                assert_eq!(is_public(address), allowed, "{form} of {v4}: {address}");
            }
        };
        for private in [
            "10.0.0.1",
            "127.0.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
        ] {
            check(private, false);
        }
        // The translator or relay sends it on to the public address: allowed as that address.
        check("8.8.8.8", true);

        for (url, allowed) in [
            ("http://[::1]/", false),
            ("http://[::]/", false),
            // NAT64 for a local network: the operator's translator decides where it leads.
            ("http://[64:ff9b:1::808:808]/", false),
            ("http://[2001:db8::1]/", false),
            ("http://[2606:4700:4700::1111]/", true),
        ] {
            assert_eq!(closed.check_url(url).is_ok(), allowed, "{url}");
        }
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
