// Issue 13.3: the performance database's connection strings. Every form of a PostgreSQL password is
// redacted in what Strata prints; a libpq keyword/value string is refused instead of becoming an
// SQLite file named after the password; libpq's own error messages reach the user without it.
#include "lowerbound/perfdb/db_url.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../test_util.h"
#include "lowerbound/perfdb/perf_db.h"

namespace strata::lowerbound {
namespace {

TEST(DbUrl, EveryFormOfThePasswordIsRedacted) {
  struct Case {
    std::string url, redacted, password;
  };
  const Case cases[] = {
      {"postgresql://strata:hunter2@db.example:5432/perf", "postgresql://strata:***@db.example:5432/perf",
       "hunter2"},
      {"postgres://u:p%40ss%3Aw@h/db", "postgres://u:***@h/db", "p@ss:w"},
      {"postgresql://u:a@b@h/db", "postgresql://u:***@h/db",
       "a@b"},  // an unencoded '@': the last one ends it
      {"postgresql://u@h/db?password=hunter2", "postgresql://u@h/db?password=***", "hunter2"},
      {"postgresql://u@h/db?sslmode=require&password=hunter2&connect_timeout=2",
       "postgresql://u@h/db?sslmode=require&password=***&connect_timeout=2", "hunter2"},
      {"postgresql://u:one@h1,h2:5433/db?password=two", "postgresql://u:***@h1,h2:5433/db?password=***",
       "one"},
      {"postgresql://u@h/db", "postgresql://u@h/db", ""},
      {"postgresql://h/db?passfile=/home/u/.pgpass", "postgresql://h/db?passfile=/home/u/.pgpass", ""},
      {"host=db password=hunter2 dbname=perf", "host=db password=*** dbname=perf", ""},
      {"host=db password = 'hunter 2' user=u", "host=db password = *** user=u", ""},
      {"/home/u/perf.sqlite", "/home/u/perf.sqlite", ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(redact_db_url(c.url), c.redacted) << c.url;
    EXPECT_EQ(db_url_password(c.url), c.password) << c.url;
  }
}

TEST(DbUrl, KeywordValueStringsAreRefusedNotTakenAsFiles) {
  testing::TempDir dir;
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  for (const std::string url : {"host=localhost password=hunter2", "  dbname=perf user=u password=hunter2",
                                "password=hunter2", "service=perf", "host = db port=5432"}) {
    DbTarget target;
    std::string error;
    EXPECT_FALSE(parse_db_url(url, &target, &error)) << url;
    EXPECT_NE(error.find("keyword/value string"), std::string::npos) << error;
    EXPECT_NE(error.find("postgresql://USER@HOST:PORT/DB"), std::string::npos) << error;
    EXPECT_NE(error.find("~/.pgpass"), std::string::npos) << error;
    EXPECT_EQ(error.find("hunter2"), std::string::npos) << error;
    error.clear();
    EXPECT_EQ(open_perf_db(url, &error), nullptr) << url;
    EXPECT_EQ(error.find("hunter2"), std::string::npos) << error;
  }
  // Nothing was created: before, each string became an SQLite file named after it.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  std::filesystem::current_path(cwd);
  // A file whose name merely contains '=' is a file; sqlite: says so explicitly.
  DbTarget target;
  std::string error;
  EXPECT_TRUE(parse_db_url("./runs/a=b.sqlite", &target, &error)) << error;
  EXPECT_EQ(target.kind, DbTarget::Kind::kSqlite);
  EXPECT_TRUE(parse_db_url("sqlite:host=x", &target, &error)) << error;
  EXPECT_EQ(target.location, "host=x");
  EXPECT_TRUE(parse_db_url("postgresql://u@h/db", &target, &error));
  EXPECT_EQ(target.kind, DbTarget::Kind::kPostgres);
}

TEST(DbUrl, LibpqMessagesAreScrubbed) {
  EXPECT_EQ(scrub_password("could not parse \"p@ss\" near p%40ss", "postgresql://u:p%40ss@h/db"),
            "could not parse \"***\" near ***");
  EXPECT_EQ(scrub_password("bad value 'hunter 2'", "host=h password='hunter 2'"), "bad value '***'");
  EXPECT_EQ(scrub_password("nothing secret", "postgresql://u@h/db"), "nothing secret");
}

// Secrets are found in the text as given, never in what an earlier secret was replaced by: with
// secrets "s" and "*" the in-place replacement tripled every star once per "*" (a 358-byte --db string
// from the fuzzer took 28 s and grew without bound); here 6 passes would give 2,188 characters.
TEST(DbUrl, ScrubbingReadsTheTextOnceWhateverTheSecrets) {
  const std::string url = "host=h password=s password=* password=* password=*";
  EXPECT_EQ(scrub_password("s*", url), "***");
  EXPECT_EQ(scrub_password("a s b * c", url), "a *** b *** c");
  std::string text;
  for (int k = 0; k < 1000; ++k) text += "s*x";
  const std::string out = scrub_password(text, url);
  EXPECT_EQ(out.size(), 4000u);  // each "s*" one run of "***", each x kept
  EXPECT_EQ(out.find('s'), std::string::npos);
}

// Against the test server: connection failures with a password in every form print none of it.
TEST(DbUrl, PostgresErrorsNeverHoldThePassword) {
  const char* pg = std::getenv("STRATA_TEST_PG_URL");
  if (!pg || !*pg) GTEST_SKIP() << "STRATA_TEST_PG_URL not set (scripts/start_postgres.sh prints one)";
  std::string base = pg;  // postgresql://USER@HOST:PORT/DB
  size_t scheme = base.find("://") + 3, at = base.find('@', scheme), slash = base.find('/', scheme);
  ASSERT_NE(at, std::string::npos);
  const std::string user = base.substr(scheme, at - scheme), host = base.substr(at + 1, slash - at - 1);
  for (const std::string& url :
       {"postgresql://" + user + ":Sekr1tPw@" + host + "/no_such_database_x",
        "postgresql://" + user + "@" + host + "/no_such_database_x?password=Sekr1tPw",
        "postgresql://" + user + ":Sekr1t%50w@" + host + "/no_such_database_x"}) {
    std::string error;
    EXPECT_EQ(open_perf_db(url, &error), nullptr) << url;
    EXPECT_NE(error.find("PostgreSQL: cannot connect"), std::string::npos) << error;
    EXPECT_NE(error.find("no_such_database_x"), std::string::npos) << error;
    EXPECT_EQ(error.find("Sekr1tPw"), std::string::npos) << error;
    EXPECT_EQ(error.find("Sekr1t%50w"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace strata::lowerbound
