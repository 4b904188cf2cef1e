//! Registrable domains (eTLD+1): the unit reputation lists are matched on and corroboration is
//! counted in. `news.bbc.co.uk` → `bbc.co.uk`, `sun.org` → `sun.org` (never `un.org`),
//! `alice.github.io` → `alice.github.io` (a hosting suffix: every user is a separate site).
//!
//! The Public Suffix List is the `psl` crate's, compiled in (every ICANN suffix and the private
//! hosting ones: `*.github.io`, `*.s3.amazonaws.com`, …); a host under a suffix the list does not
//! know takes its last two labels. Pure; never panics.

/// The host of a URL, lower-cased, without a trailing dot; `None` for non-http(s) text.
pub fn host_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url.trim()).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return None;
    }
    let host = parsed
        .host_str()?
        .trim_end_matches('.')
        .to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// The registrable domain of `host`: its public suffix plus one label. An IP address is its own
/// domain; a bare suffix (`co.uk`) has none.
pub fn registrable_domain(host: &str) -> Option<String> {
    let host = clean(host);
    if host.is_empty() {
        return None;
    }
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        return Some(host);
    }
    if host == "localhost" {
        return Some(host);
    }
    if host.split('.').any(str::is_empty) {
        return None;
    }
    psl::domain_str(&host).map(str::to_owned)
}

/// Whether `host` is `domain` or one of its subdomains, compared label by label (so `sun.org`
/// is never `un.org`).
pub fn is_within(host: &str, domain: &str) -> bool {
    let host = clean(host);
    let domain = clean(domain);
    !domain.is_empty() && (host == domain || host.ends_with(&format!(".{domain}")))
}

/// Whether `host`'s labels end with `suffix`'s labels (`nasa.gov` ends with `gov`; `ox.ac.uk`
/// with `ac.uk`).
pub fn has_suffix(host: &str, suffix: &str) -> bool {
    is_within(host, suffix) && clean(host) != clean(suffix)
}

fn clean(host: &str) -> String {
    host.trim().trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrable_domains() {
        let cases = [
            ("sun.org", Some("sun.org")),
            ("un.org", Some("un.org")),
            ("www.un.org", Some("un.org")),
            ("news.bbc.co.uk", Some("bbc.co.uk")),
            ("bbc.co.uk", Some("bbc.co.uk")),
            ("co.uk", None),
            ("www.ox.ac.uk", Some("ox.ac.uk")),
            ("alice.github.io", Some("alice.github.io")),
            ("github.io", None),
            ("pubmed.ncbi.nlm.nih.gov", Some("nih.gov")),
            ("Example.COM.", Some("example.com")),
            ("127.0.0.1", Some("127.0.0.1")),
            ("abc.net.au", Some("abc.net.au")),
            // Suffixes a hand-picked list missed: every ccTLD and hosting suffix of the PSL.
            ("www.parliament.gv.at", Some("parliament.gv.at")),
            ("bucket.s3.amazonaws.com", Some("bucket.s3.amazonaws.com")),
            ("news.example.com.ng", Some("example.com.ng")),
            ("a..b.com", None),
            ("", None),
        ];
        for (host, want) in cases {
            assert_eq!(registrable_domain(host).as_deref(), want, "{host}");
        }
    }

    #[test]
    fn matching_is_by_label_never_by_substring() {
        assert!(!is_within("sun.org", "un.org"));
        assert!(is_within("www.un.org", "un.org"));
        assert!(is_within("un.org", "un.org"));
        assert!(!is_within("un.org.evil.com", "un.org"));
        assert!(has_suffix("nasa.gov", "gov"));
        assert!(!has_suffix("gov", "gov"));
        assert!(!has_suffix("govt.example.com", "gov"));
        assert_eq!(
            host_of("https://WWW.Nature.com/articles/x").as_deref(),
            Some("www.nature.com")
        );
        assert_eq!(host_of("file:///etc/passwd"), None);
    }
}
