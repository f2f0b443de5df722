package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.StringWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 8, section 6: every Java snippet of the README compiles on Java 17, exactly as shown. The
 * README itself is the source: its {@code ```java} blocks are read, their imports put on top, their
 * statements run in order inside one method of a {@link ReadmeSnippetContext} subclass, and the
 * whole compiled with {@code javac --release 17 -Xlint:all,-try -Werror} against the test class
 * path. A snippet that needs a newer Java (a pattern-matching {@code switch}) or a changed API
 * fails here.
 *
 * <p>The adapter sections (from {@value #ADAPTERS} on) are read no further: their snippets need
 * Camel, Kafka and Spring on the class path, and each is an excerpt of its module's example under
 * {@code examples/}, which that module's tests compile and run.
 */
class ReadmeSnippetsTest {
  private static final Path README = Path.of("..", "README.md");
  private static final Pattern JAVA_BLOCK = Pattern.compile("(?ms)^```java\\n(.*?)^```$");
  private static final Pattern XML_BLOCK = Pattern.compile("(?ms)^```xml\\n(.*?)^```$");

  /** The first adapter section's heading. */
  static final String ADAPTERS = "## Apache Camel";

  static List<String> javaBlocks() throws IOException {
    String whole = Files.readString(README, StandardCharsets.UTF_8);
    int adapters = whole.indexOf("\n" + ADAPTERS);
    String readme = adapters < 0 ? whole : whole.substring(0, adapters);
    List<String> blocks = new ArrayList<>();
    Matcher m = JAVA_BLOCK.matcher(readme);
    while (m.find()) {
      blocks.add(m.group(1));
    }
    return blocks;
  }

  /** The README's snippets as one compilation unit: imports first, statements in one method. */
  static String compilationUnit(List<String> blocks) {
    Set<String> imports = new LinkedHashSet<>();
    StringBuilder body = new StringBuilder();
    for (String block : blocks) {
      for (String line : block.split("\n", -1)) {
        if (line.startsWith("import ")) {
          imports.add(line);
        } else {
          body.append("    ").append(line).append('\n');
        }
      }
    }
    return String.join("\n", imports)
        + "\n\nclass ReadmeSnippets extends dev.idem.server.ReadmeSnippetContext {\n"
        + "  @Override\n  protected void run() throws Exception {\n"
        + body
        + "  }\n}\n";
  }

  static String compile(String source, Path out) throws IOException {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertThat(javac).as("a JDK's compiler (run the tests on a JDK, not a JRE)").isNotNull();
    JavaFileObject unit =
        new SimpleJavaFileObject(
            URI.create("string:///ReadmeSnippets.java"), JavaFileObject.Kind.SOURCE) {
          @Override
          public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return source;
          }
        };
    StringWriter diagnostics = new StringWriter();
    try (StandardJavaFileManager files =
        javac.getStandardFileManager(null, null, StandardCharsets.UTF_8)) {
      List<String> options =
          List.of(
              "--release",
              "17",
              // every lint but "try": `try (Permit turn = ...)` holds a turn it never names
              "-Xlint:all,-try",
              "-Werror",
              "-proc:none",
              "-classpath",
              System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
              "-d",
              out.toString());
      boolean ok = javac.getTask(diagnostics, files, null, options, null, List.of(unit)).call();
      return ok ? "" : diagnostics.toString();
    }
  }

  @Test
  void theReadmeHasJavaSnippets() throws IOException {
    List<String> blocks = javaBlocks();

    assertThat(blocks).hasSizeGreaterThanOrEqualTo(3);
    assertThat(String.join("\n", blocks))
        .contains("MemoryDedupStore.builder()")
        .contains("dedup.reserve(key)")
        .contains("byte[] body")
        .contains("Map<String, String> headers");
  }

  @Test
  void everyJavaSnippetCompilesOnJava17AsShown(@TempDir Path out) throws IOException {
    String source = compilationUnit(javaBlocks());

    String errors = compile(source, out);

    assertThat(errors).as("javac --release 17 on the README's snippets:\n%s", source).isEmpty();
  }

  @Test
  void aSnippetThatNeedsANewerJavaFailsThisCheck(@TempDir Path out) throws IOException {
    // the README's former snippet: a pattern-matching switch, final only in Java 21
    String old =
        """
        import dev.idem.Decision;
        import dev.idem.DedupKey;
        import dev.idem.Deduplicator;

        Deduplicator dedup = null;
        DedupKey key = null;
        switch (dedup.reserve(key)) {
          case Decision.Acquired a -> a.reservation().commit();
          case Decision.Duplicate d -> log.debug("duplicate {}", d.key());
          case Decision.InFlight f -> retryLater();
          case Decision.Conflict c -> reject();
        }
        """;

    String errors = compile(compilationUnit(List.of(old)), out);

    assertThat(errors).isNotEmpty();
  }

  @Test
  void theBomSnippetNamesTheVersionThisBuildMakes() throws IOException {
    String readme = Files.readString(README, StandardCharsets.UTF_8);
    String bom = Files.readString(Path.of("..", "idem-bom", "pom.xml"), StandardCharsets.UTF_8);
    Matcher v =
        Pattern.compile("<artifactId>idem-bom</artifactId>\\s*<version>([^<]+)</version>")
            .matcher(bom);
    assertThat(v.find()).as("idem-bom/pom.xml has a version").isTrue();

    Matcher xml = XML_BLOCK.matcher(readme);
    assertThat(xml.find()).as("the README has a BOM snippet").isTrue();
    assertThat(xml.group(1))
        .contains("<artifactId>idem-bom</artifactId>")
        .contains("<version>" + v.group(1) + "</version>")
        .contains("<scope>import</scope>")
        .contains("<artifactId>idem-core</artifactId>");
    assertThat(readme).contains("./mvnw -B install -DskipTests");
  }
}
