//! Builds into the binary what the server serves from its own files:
//! - the web page (`web/`): `web_files.rs`, a table of every file there and its bytes, for
//!   `src/web.rs`. No JavaScript build step: the files are served as they are.
//! - the guides (`docs/guides/*.md` at the repository's root): `guides.rs`, each one rendered
//!   to HTML, for `src/docs.rs`. Markdown is read here, so the server carries no renderer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // A directory here means any change beneath it.
    println!("cargo:rerun-if-changed=web");
    println!("cargo:rerun-if-changed=../../docs/guides");
    std::fs::write(out.join("web_files.rs"), web_files(&manifest.join("web")))
        .expect("write web_files.rs");
    std::fs::write(
        out.join("guides.rs"),
        guides(&manifest.join("../../docs/guides")),
    )
    .expect("write guides.rs");
}

fn files_in(dir: &Path, extension: Option<&str>) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .filter(|path| extension.is_none_or(|e| path.extension().is_some_and(|x| x == e)))
        .collect();
    files.sort();
    files
}

fn file_name(path: &Path) -> &str {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("UTF-8 file names")
}

/// `&[(name, bytes)]` of every file in `dir`.
fn web_files(dir: &Path) -> String {
    let mut table = String::from("&[\n");
    for path in files_in(dir, None) {
        let name = file_name(&path);
        table.push_str(&format!(
            "    ({name:?}, include_bytes!({:?})),\n",
            path.display()
        ));
    }
    table.push(']');
    table
}

/// `&[Guide { page, title, html }]`: `README.md` first as the index (page `""`), then the
/// guides in the order the index links them, then any it does not link, by name.
fn guides(dir: &Path) -> String {
    let mut rendered: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut index_links = Vec::new();
    for path in files_in(dir, Some("md")) {
        let stem = file_name(&path).trim_end_matches(".md").to_owned();
        let page = if stem == "README" {
            String::new()
        } else {
            stem
        };
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let (title, html, links) = render(&text, &path);
        if page.is_empty() {
            index_links = links;
        }
        rendered.insert(page, (title, html));
    }
    assert!(
        rendered.contains_key(""),
        "{}: no README.md, the index of /docs",
        dir.display()
    );
    let mut order = vec![String::new()];
    for page in index_links.into_iter().chain(rendered.keys().cloned()) {
        if rendered.contains_key(&page) && !order.contains(&page) {
            order.push(page);
        }
    }
    let mut table = String::from("&[\n");
    for page in order {
        let (title, html) = &rendered[&page];
        table.push_str(&format!(
            "    Guide {{ page: {page:?}, title: {title:?}, html: {html:?} }},\n"
        ));
    }
    table.push(']');
    table
}

/// A guide's title (its one `# ` heading, left out of the HTML, which the page puts in its
/// own header), its HTML, and the guides it links, in order. Links to `other.md` become the
/// page `/docs/other` (the same link works on GitHub), and headings get GitHub's anchors.
fn render(text: &str, path: &Path) -> (String, String, Vec<String>) {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut events = Vec::new();
    let mut links = Vec::new();
    let mut title = None;
    let mut heading: Option<(HeadingLevel, Vec<Event>)> = None;
    for event in Parser::new_ext(text, options) {
        let event = match event {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let dest_url = match guide_link(&dest_url) {
                    Some((page, rest)) => {
                        links.push(page.clone());
                        let page = if page == "README" { "" } else { &page };
                        let slash = if page.is_empty() { "" } else { "/" };
                        CowStr::from(format!("/docs{slash}{page}{rest}"))
                    }
                    None => dest_url,
                };
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                })
            }
            other => other,
        };
        match (event, &mut heading) {
            (Event::Start(Tag::Heading { level, .. }), None) => heading = Some((level, Vec::new())),
            (Event::End(TagEnd::Heading(_)), Some(_)) => {
                let (level, inner) = heading.take().expect("inside a heading");
                let words: String = (inner.iter())
                    .filter_map(|event| match event {
                        Event::Text(text) | Event::Code(text) => Some(text.as_ref()),
                        _ => None,
                    })
                    .collect();
                if level == HeadingLevel::H1 {
                    assert!(
                        title.replace(words).is_none(),
                        "{}: more than one `# ` title",
                        path.display()
                    );
                    continue;
                }
                let mut html = String::new();
                pulldown_cmark::html::push_html(&mut html, inner.into_iter());
                events.push(Event::Html(CowStr::from(format!(
                    "<{level} id=\"{}\">{html}</{level}>\n",
                    anchor(&words)
                ))));
            }
            (event, Some((_, inner))) => inner.push(event),
            (event, None) => events.push(event),
        }
    }
    let title = title.unwrap_or_else(|| panic!("{}: no `# ` title", path.display()));
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    (title, html, links)
}

/// `other.md#part` as (`other`, `#part`), for a link to a guide beside this one.
fn guide_link(url: &str) -> Option<(String, String)> {
    let (file, rest) = match url.find('#') {
        Some(at) => url.split_at(at),
        None => (url, ""),
    };
    let page = file.strip_suffix(".md")?;
    let plain = !page.is_empty() && (page.chars()).all(|c| c.is_ascii_alphanumeric() || c == '-');
    plain.then(|| (page.to_owned(), rest.to_owned()))
}

/// GitHub's anchor for a heading: lower case, spaces as `-`, punctuation dropped.
fn anchor(words: &str) -> String {
    (words.to_lowercase().chars())
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}
