#include "lowerbound/perfdb/db_url.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::lowerbound {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_uri(const std::string& url) {
  return starts_with(url, "postgresql://") || starts_with(url, "postgres://");
}

// libpq's connection keywords (the ones a keyword/value string starts with).
bool is_libpq_keyword(std::string_view k) {
  static constexpr std::string_view kKeywords[] = {"host",
                                                   "hostaddr",
                                                   "port",
                                                   "dbname",
                                                   "user",
                                                   "password",
                                                   "passfile",
                                                   "service",
                                                   "options",
                                                   "sslmode",
                                                   "sslcert",
                                                   "sslkey",
                                                   "sslrootcert",
                                                   "connect_timeout",
                                                   "application_name",
                                                   "target_session_attrs",
                                                   "channel_binding",
                                                   "krbsrvname",
                                                   "gssencmode",
                                                   "requiressl",
                                                   "client_encoding",
                                                   "keepalives",
                                                   "require_auth"};
  for (std::string_view kw : kKeywords)
    if (k == kw) return true;
  return false;
}

// "key=" at the start of `s` (after spaces), with key a libpq keyword.
bool looks_like_conninfo(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  size_t k = i;
  while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '_')) ++k;
  size_t eq = k;
  while (eq < s.size() && s[eq] == ' ') ++eq;
  return k > i && eq < s.size() && s[eq] == '=' && is_libpq_keyword(std::string_view(s).substr(i, k - i));
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// [begin, end) of the userinfo password in a URI; begin == end when there is none.
std::pair<size_t, size_t> userinfo_password(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return {0, 0};
  size_t authority = scheme + 3;
  size_t authority_end = url.find_first_of("/?#", authority);
  if (authority_end == std::string::npos) authority_end = url.size();
  size_t at = url.rfind('@', authority_end);
  if (at == std::string::npos || at < authority) return {0, 0};
  size_t colon = url.find(':', authority);
  if (colon == std::string::npos || colon > at) return {0, 0};
  return {colon + 1, at};
}

// [begin, end) of every value of a "password=" parameter: URI query parameters (up to '&' or '#')
// or keyword/value pairs (a quoted value up to its closing quote, else up to a space).
std::vector<std::pair<size_t, size_t>> password_values(const std::string& s, bool uri) {
  std::vector<std::pair<size_t, size_t>> out;
  const std::string key = "password";
  for (size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + 1)) {
    // The key must start a parameter: after '?', '&', the start or a space.
    if (p > 0 && s[p - 1] != '?' && s[p - 1] != '&' && !std::isspace(static_cast<unsigned char>(s[p - 1])))
      continue;
    size_t eq = p + key.size();
    while (eq < s.size() && s[eq] == ' ') ++eq;
    if (eq >= s.size() || s[eq] != '=') continue;
    size_t v = eq + 1;
    while (!uri && v < s.size() && s[v] == ' ') ++v;
    size_t end = v;
    if (uri) {
      end = s.find_first_of("&#", v);
      if (end == std::string::npos) end = s.size();
    } else {
      // Quoted parts may hold spaces; the value ends at the first space outside quotes.
      bool quoted = false;
      while (end < s.size() && (quoted || !std::isspace(static_cast<unsigned char>(s[end])))) {
        if (s[end] == '\\' && quoted)
          ++end;
        else if (s[end] == '\'')
          quoted = !quoted;
        ++end;
      }
      end = std::min(end, s.size());
    }
    if (end > v) out.push_back({v, end});    // an empty value hides nothing
    p = std::max(p, end > 0 ? end - 1 : 0);  // "password=" inside a value is part of it
  }
  return out;
}

}  // namespace

bool parse_db_url(const std::string& url, DbTarget* out, std::string* error) {
  if (is_uri(url)) {
    out->kind = DbTarget::Kind::kPostgres;
    out->location = url;
    return true;
  }
  if (starts_with(url, "sqlite:")) {
    out->kind = DbTarget::Kind::kSqlite;
    out->location = url.substr(7);
  } else if (looks_like_conninfo(url)) {
    *error = "'" + redact_db_url(url) +
             "' is a PostgreSQL keyword/value string, not a database file: pass a URI, "
             "postgresql://USER@HOST:PORT/DB (the password in ~/.pgpass, $PGPASSWORD or a service file), or "
             "sqlite:PATH for a file of that name";
    return false;
  } else {
    out->kind = DbTarget::Kind::kSqlite;
    out->location = url;
  }
  if (out->location.empty()) {
    *error =
        "empty database path (no $STRATA_PERF_DB, and no home directory for the default "
        "~/.cache/strata/perf.sqlite); pass --db FILE.sqlite or --db postgresql://USER@HOST:PORT/DB";
    return false;
  }
  return true;
}

std::string db_url_password(const std::string& url) {
  if (!is_uri(url)) return "";
  auto [b, e] = userinfo_password(url);
  if (e > b) return percent_decode(std::string_view(url).substr(b, e - b));
  size_t query = url.find('?');
  if (query == std::string::npos) return "";
  for (auto [vb, ve] : password_values(url.substr(query), true))
    if (ve > vb) return percent_decode(std::string_view(url).substr(query + vb, ve - vb));
  return "";
}

std::string redact_db_url(const std::string& url) {
  const bool uri = is_uri(url);
  std::vector<std::pair<size_t, size_t>> spans;
  if (uri) {
    auto [b, e] = userinfo_password(url);
    if (e > b) spans.push_back({b, e});
    size_t query = url.find('?');
    if (query != std::string::npos)
      for (auto [vb, ve] : password_values(url.substr(query), true))
        spans.push_back({query + vb, query + ve});
  } else {
    spans = password_values(url, false);
  }
  std::string out;
  size_t at = 0;
  for (auto [b, e] : spans) {
    if (b < at) continue;
    out += url.substr(at, b - at) + "***";
    at = e;
  }
  return out + url.substr(at);
}

std::string scrub_password(const std::string& text, const std::string& url) {
  // The password as written (percent-encoded or quoted) and as decoded.
  std::vector<std::string> secrets;
  const bool uri = is_uri(url);
  if (uri) {
    auto [b, e] = userinfo_password(url);
    if (e > b) secrets.push_back(url.substr(b, e - b));
    size_t query = url.find('?');
    if (query != std::string::npos)
      for (auto [vb, ve] : password_values(url.substr(query), true))
        if (ve > vb) secrets.push_back(url.substr(query + vb, ve - vb));
  } else {
    for (auto [b, e] : password_values(url, false)) {
      std::string v = url.substr(b, e - b);
      if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
      if (!v.empty()) secrets.push_back(v);
    }
  }
  for (size_t i = 0, n = secrets.size(); i < n; ++i) secrets.push_back(percent_decode(secrets[i]));
  std::sort(secrets.begin(), secrets.end());
  secrets.erase(std::unique(secrets.begin(), secrets.end()), secrets.end());
  // Every occurrence of every secret in the text as given, marked, then each marked run written as
  // "***" once. Replacing in place secret after secret rescanned the replacements: a secret "*"
  // after a secret "s" tripled every star again, each pass (a 358-byte --db string took 28 s).
  std::vector<bool> hidden(text.size(), false);
  for (const std::string& secret : secrets) {
    if (secret.empty()) continue;
    for (size_t p = text.find(secret); p != std::string::npos; p = text.find(secret, p + 1))
      std::fill(hidden.begin() + static_cast<std::ptrdiff_t>(p),
                hidden.begin() + static_cast<std::ptrdiff_t>(p + secret.size()), true);
  }
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (!hidden[i]) {
      out += text[i];
    } else if (i == 0 || !hidden[i - 1]) {
      out += "***";
    }
  }
  return out;
}

}  // namespace strata::lowerbound
