//! Registrable domains (eTLD+1): the unit reputation lists are matched on and corroboration is
//! counted in. `news.bbc.co.uk` → `bbc.co.uk`, `sun.org` → `sun.org` (never `un.org`),
//! `alice.github.io` → `alice.github.io` (a hosting suffix: every user is a separate site).
//!
//! A built-in list of the multi-label public suffixes that matter in practice stands in for the
//! full Public Suffix List; hosts under other suffixes take their last two labels. Pure; never
//! panics.

/// Multi-label public suffixes (ICANN and common hosting ones) checked before the last-two-labels
/// rule. Longest match wins.
const MULTI_LABEL_SUFFIXES: &[&str] = &[
    // United Kingdom
    "co.uk",
    "ac.uk",
    "gov.uk",
    "org.uk",
    "me.uk",
    "ltd.uk",
    "plc.uk",
    "net.uk",
    "sch.uk",
    "nhs.uk",
    "police.uk",
    "mod.uk", // Australia, New Zealand
    "com.au",
    "net.au",
    "org.au",
    "edu.au",
    "gov.au",
    "asn.au",
    "id.au",
    "co.nz",
    "org.nz",
    "ac.nz",
    "govt.nz",
    "net.nz", // Asia
    "co.jp",
    "ac.jp",
    "go.jp",
    "or.jp",
    "ne.jp",
    "co.kr",
    "ac.kr",
    "go.kr",
    "or.kr",
    "com.cn",
    "edu.cn",
    "gov.cn",
    "org.cn",
    "net.cn",
    "ac.cn",
    "com.hk",
    "edu.hk",
    "gov.hk",
    "org.hk",
    "com.tw",
    "edu.tw",
    "gov.tw",
    "org.tw",
    "com.sg",
    "edu.sg",
    "gov.sg",
    "co.in",
    "ac.in",
    "gov.in",
    "nic.in",
    "res.in",
    "org.in",
    "net.in",
    "co.id",
    "ac.id",
    "go.id",
    "or.id",
    "com.my",
    "edu.my",
    "gov.my",
    "co.th",
    "ac.th",
    "go.th",
    "com.ph",
    "edu.ph",
    "gov.ph",
    "com.vn",
    "edu.vn",
    "gov.vn",
    "com.pk",
    "edu.pk",
    "gov.pk",
    "ac.il",
    "co.il",
    "gov.il",
    "org.il",
    "com.tr",
    "edu.tr",
    "gov.tr",
    "org.tr",
    "ac.ir",
    "com.sa",
    "edu.sa",
    "gov.sa",
    "ac.ae",
    "gov.ae", // Americas
    "com.br",
    "edu.br",
    "gov.br",
    "org.br",
    "net.br",
    "com.mx",
    "edu.mx",
    "gob.mx",
    "org.mx",
    "com.ar",
    "edu.ar",
    "gob.ar",
    "gov.ar",
    "org.ar",
    "com.co",
    "edu.co",
    "gov.co",
    "cl.cl",
    "gob.cl",
    "com.pe",
    "edu.pe",
    "gob.pe",
    "gc.ca",
    "qc.ca",
    "on.ca",
    "bc.ca",
    "ab.ca",
    // Africa, Europe
    "co.za",
    "ac.za",
    "gov.za",
    "org.za",
    "co.ke",
    "ac.ke",
    "go.ke",
    "com.ng",
    "edu.ng",
    "gov.ng",
    "com.eg",
    "edu.eg",
    "gov.eg",
    "co.at",
    "ac.at",
    "gv.at",
    "or.at",
    "com.pl",
    "edu.pl",
    "gov.pl",
    "org.pl",
    "com.ua",
    "edu.ua",
    "gov.ua",
    "com.es",
    "gob.es",
    "org.es",
    "com.pt",
    "gov.pt",
    "com.gr",
    "edu.gr",
    "gov.gr",
    "co.it",
    "gov.it",
    "ac.be",
    "gouv.fr",
    "asso.fr",
    "com.fr",
    "ac.cy",
    "gov.cy", // Hosting: each subdomain is its own site
    "github.io",
    "gitlab.io",
    "blogspot.com",
    "wordpress.com",
    "herokuapp.com",
    "netlify.app",
    "vercel.app",
    "pages.dev",
    "workers.dev",
    "readthedocs.io",
    "substack.com",
    "medium.com",
    "appspot.com",
    "web.app",
    "firebaseapp.com",
    "azurewebsites.net",
    "cloudfront.net",
    "s3.amazonaws.com",
    "fly.dev",
    "glitch.me",
    "neocities.org",
    "tumblr.com",
];

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

/// The public suffix of `host` (`co.uk`, `org`, `github.io`), by the built-in list.
pub fn public_suffix(host: &str) -> String {
    let host = clean(host);
    let labels: Vec<&str> = host.split('.').filter(|l| !l.is_empty()).collect();
    if labels.len() <= 1 {
        return host;
    }
    for take in (2..=labels.len().min(3)).rev() {
        let candidate = labels[labels.len() - take..].join(".");
        if MULTI_LABEL_SUFFIXES.contains(&candidate.as_str()) {
            return candidate;
        }
    }
    labels[labels.len() - 1].to_owned()
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
    let suffix = public_suffix(&host);
    if host == suffix {
        return (!host.contains('.') && host == "localhost").then_some(host);
    }
    let rest = host.strip_suffix(&suffix)?.trim_end_matches('.');
    let label = rest.rsplit('.').next().filter(|l| !l.is_empty())?;
    Some(format!("{label}.{suffix}"))
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
