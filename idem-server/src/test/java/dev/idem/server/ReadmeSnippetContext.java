package dev.idem.server;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the README's Java snippets take as the reader's own code: the work to run, a logger, the
 * JDBC URL and ordering key. {@link ReadmeSnippetsTest} compiles the snippets inside a subclass.
 */
public abstract class ReadmeSnippetContext {
  /** The reader's logger. */
  protected final Logger log = LoggerFactory.getLogger("readme");

  /** The reader's JDBC URL. */
  protected final String jdbcUrl = "jdbc:h2:mem:readme";

  /** The reader's ordering key. */
  protected final String customerId = "cust-42";

  /** Creates the context. */
  protected ReadmeSnippetContext() {}

  /**
   * The reader's side effect.
   *
   * @param body the event
   */
  protected void ship(byte[] body) {}

  /**
   * The reader's work.
   *
   * @throws Exception as real work may
   */
  protected void work() throws Exception {}

  /** The reader's answer to an event in flight. */
  protected void retryLater() {}

  /** The reader's answer to a conflict. */
  protected void reject() {}

  /**
   * The snippets, in README order.
   *
   * @throws Exception whatever they throw
   */
  protected abstract void run() throws Exception;
}
