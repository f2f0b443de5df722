package dev.idem.server.support;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.function.Predicate;
import org.slf4j.LoggerFactory;

/** Records what Idem's loggers write while open (logback's list appender on {@code dev.idem}). */
public final class LogCapture implements AutoCloseable {
  private final Logger logger;
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

  private LogCapture(String name) {
    logger = (Logger) LoggerFactory.getLogger(name);
    appender.setContext(logger.getLoggerContext());
    appender.start();
    logger.addAppender(appender);
  }

  /** Starts recording {@code dev.idem} and below. */
  public static LogCapture idem() {
    return new LogCapture("dev.idem");
  }

  /** The formatted lines so far at {@code level} or above, as "LEVEL message". */
  public List<String> lines(Level level) {
    synchronized (appender) {
      return appender.list.stream()
          .filter(e -> e.getLevel().isGreaterOrEqual(level))
          .map(e -> e.getLevel() + " " + e.getFormattedMessage())
          .toList();
    }
  }

  /** The lines at INFO or above that match. */
  public List<String> lines(Predicate<String> match) {
    return lines(Level.INFO).stream().filter(match).toList();
  }

  @Override
  public void close() {
    logger.detachAppender(appender);
    appender.stop();
  }
}
