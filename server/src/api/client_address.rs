//! The client's address behind load balancers: `--trusted-proxies` names the networks whose
//! connections may say whom they forward, in the one header `--forwarded-header` names
//! (`X-Forwarded-For` by default, or `Forwarded`, RFC 7239). The other header is never read,
//! so a client cannot pick the address the login throttle counts it under by sending the
//! header its proxy passes through unchanged. A request from any other peer is its peer,
//! whatever it claims.
//!
//! The forwarded chain is read from the right (the hop nearest this server) to the left:
//! addresses of trusted proxies are skipped, and the first other address is the client. A
//! chain that says nothing usable leaves the nearest trusted hop as the client.

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;

use crate::config::ForwardedHeader;

/// `--trusted-proxies` and `--forwarded-header`: the networks of the proxies in front of the
/// server, and the header they write.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    networks: Vec<IpNet>,
    header: ForwardedHeader,
}

impl TrustedProxies {
    /// Reads `--trusted-proxies` entries: CIDRs (`10.0.0.0/8`) or single addresses.
    pub fn parse(entries: &[String], header: ForwardedHeader) -> Result<TrustedProxies, String> {
        let mut networks = Vec::new();
        for entry in entries
            .iter()
            .map(|entry| entry.trim())
            .filter(|entry| !entry.is_empty())
        {
            let network = entry
                .parse::<IpNet>()
                .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    format!("--trusted-proxies {entry:?} is neither an address nor a CIDR")
                })?;
            networks.push(network);
        }
        Ok(TrustedProxies { networks, header })
    }

    fn trusts(&self, address: IpAddr) -> bool {
        let address = address.to_canonical();
        self.networks
            .iter()
            .any(|network| network.contains(&address))
    }

    /// The client a request from `peer` with `headers` comes from.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            return peer;
        }
        let chain = match self.header {
            ForwardedHeader::Forwarded => forwarded_chain(headers),
            ForwardedHeader::XForwardedFor => x_forwarded_for_chain(headers),
        };
        let mut client = peer;
        for hop in chain.iter().rev() {
            let Some(address) = hop else {
                // An obfuscated or unreadable hop: nothing to its left can be believed.
                break;
            };
            client = address.to_canonical();
            if !self.trusts(client) {
                break;
            }
        }
        client
    }
}

/// The `for=` of every element of every `Forwarded` header, left to right; `None` for one
/// that is not an address (`unknown`, `_hidden`, garbage).
fn forwarded_chain(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let mut chain = Vec::new();
    for value in headers.get_all("forwarded") {
        let Ok(value) = value.to_str() else {
            chain.push(None);
            continue;
        };
        for element in value.split(',') {
            let node = element.split(';').find_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                name.trim().eq_ignore_ascii_case("for").then_some(value)
            });
            if let Some(node) = node {
                chain.push(parse_node(node));
            }
        }
    }
    chain
}

/// The addresses of every `X-Forwarded-For` header, left to right.
fn x_forwarded_for_chain(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let mut chain = Vec::new();
    for value in headers.get_all("x-forwarded-for") {
        let Ok(value) = value.to_str() else {
            chain.push(None);
            continue;
        };
        chain.extend(value.split(',').map(parse_node));
    }
    chain
}

/// An address as a forwarded header writes it: `192.0.2.1`, `192.0.2.1:4711`,
/// `"[2001:db8::1]:4711"`, `2001:db8::1`.
fn parse_node(node: &str) -> Option<IpAddr> {
    let node = node.trim().trim_matches('"');
    if let Ok(address) = node.parse::<IpAddr>() {
        return Some(address);
    }
    if let Some(rest) = node.strip_prefix('[') {
        let (address, _) = rest.split_once(']')?;
        return address.parse().ok();
    }
    let (address, port) = node.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    address.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().expect("a header value"));
        }
        headers
    }

    fn address(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn the_client_is_read_from_trusted_peers_only() {
        let proxies = TrustedProxies::parse(
            &["10.0.0.0/8".into(), "::1".into()],
            ForwardedHeader::XForwardedFor,
        )
        .expect("valid");
        let forwarded = TrustedProxies::parse(
            &["10.0.0.0/8".into(), "::1".into()],
            ForwardedHeader::Forwarded,
        )
        .expect("valid");
        type Case = (
            &'static str,
            &'static [(&'static str, &'static str)],
            &'static str,
        );
        let cases: &[Case] = &[
            // An untrusted peer is itself, whatever it says.
            (
                "203.0.113.9",
                &[("x-forwarded-for", "198.51.100.1")],
                "203.0.113.9",
            ),
            // A trusted proxy's word is taken.
            (
                "10.0.0.2",
                &[("x-forwarded-for", "198.51.100.1")],
                "198.51.100.1",
            ),
            // A client's own forged entry on the left does not count: the rightmost
            // untrusted hop is the client.
            (
                "10.0.0.2",
                &[("x-forwarded-for", "1.2.3.4, 198.51.100.1, 10.0.0.7")],
                "198.51.100.1",
            ),
            // Headers repeated are one list.
            (
                "10.0.0.2",
                &[
                    ("x-forwarded-for", "1.2.3.4"),
                    ("x-forwarded-for", "198.51.100.1"),
                ],
                "198.51.100.1",
            ),
            // Nothing forwarded: the proxy itself.
            ("10.0.0.2", &[], "10.0.0.2"),
            // Garbage in the nearest hop: nothing to its left is believed.
            (
                "10.0.0.2",
                &[("x-forwarded-for", "1.2.3.4, nonsense")],
                "10.0.0.2",
            ),
            // A Forwarded header the proxy passed through is not read: the proxy writes
            // X-Forwarded-For, and the client wrote this one.
            (
                "10.0.0.2",
                &[
                    ("forwarded", "for=1.2.3.4"),
                    ("x-forwarded-for", "198.51.100.1"),
                ],
                "198.51.100.1",
            ),
            ("10.0.0.2", &[("forwarded", "for=1.2.3.4")], "10.0.0.2"),
            // An IPv4 peer written in IPv6 form is trusted as its IPv4 self.
            (
                "::ffff:10.0.0.2",
                &[("x-forwarded-for", "198.51.100.1")],
                "198.51.100.1",
            ),
            (
                "::1",
                &[("x-forwarded-for", "198.51.100.1")],
                "198.51.100.1",
            ),
        ];
        for (peer, pairs, expected) in cases {
            assert_eq!(
                proxies.client(address(peer), &headers(pairs)),
                address(expected),
                "peer {peer}, headers {pairs:?}"
            );
        }
        // With Forwarded named, it is the one read, and X-Forwarded-For is not.
        let forwarded_cases: &[Case] = &[
            (
                "10.0.0.2",
                &[
                    (
                        "forwarded",
                        "for=1.2.3.4, for=\"[2001:db8::1]:4711\";proto=https",
                    ),
                    ("x-forwarded-for", "5.6.7.8"),
                ],
                "2001:db8::1",
            ),
            (
                "10.0.0.2",
                &[("forwarded", "for=198.51.100.1:80")],
                "198.51.100.1",
            ),
            ("10.0.0.2", &[("forwarded", "for=unknown")], "10.0.0.2"),
            ("10.0.0.2", &[("x-forwarded-for", "5.6.7.8")], "10.0.0.2"),
            // A forged element on the left is skipped for the right-most untrusted hop.
            (
                "10.0.0.2",
                &[("forwarded", "for=6.6.6.6, for=198.51.100.1, for=10.0.0.9")],
                "198.51.100.1",
            ),
            (
                "203.0.113.9",
                &[("forwarded", "for=1.2.3.4")],
                "203.0.113.9",
            ),
        ];
        for (peer, pairs, expected) in forwarded_cases {
            assert_eq!(
                forwarded.client(address(peer), &headers(pairs)),
                address(expected),
                "peer {peer}, headers {pairs:?}"
            );
        }
    }

    #[test]
    fn bad_entries_are_refused() {
        let header = ForwardedHeader::XForwardedFor;
        assert!(TrustedProxies::parse(&["10.0.0.0/33".into()], header).is_err());
        assert!(TrustedProxies::parse(&["proxy.example".into()], header).is_err());
        assert!(TrustedProxies::parse(&[" 192.0.2.1 ".into(), String::new()], header).is_ok());
    }
}
