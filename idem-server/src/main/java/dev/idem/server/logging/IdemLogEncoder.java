package dev.idem.server.logging;

import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.encoder.EncoderBase;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The console encoder of {@code logback.xml}: {@code text} (the pattern, the default) or {@code
 * json} (logback's {@link JsonEncoder}: one object per line, for log shippers), chosen by {@code
 * IDEM_LOG_FORMAT}.
 *
 * <p>A JSON line holds {@code timestamp} (epoch milliseconds), {@code level}, {@code threadName},
 * {@code loggerName}, {@code mdc} (the structured fields of {@link LogFields}: {@code pipeline},
 * {@code key_digest}, {@code decision}, {@code delivery_id}), {@code kvpList} (SLF4J key-value
 * pairs, if any), {@code formattedMessage} and, for an exception, {@code throwable}. An unknown
 * format logs text and says so once on stderr.
 */
public final class IdemLogEncoder extends EncoderBase<ILoggingEvent> {
  private String format = "text";
  private String pattern = "%d %-5level [%thread] %logger{24} - %msg%n";
  private @Nullable Encoder<ILoggingEvent> delegate;

  /** Creates the encoder; logback sets its properties, then starts it. */
  public IdemLogEncoder() {}

  /**
   * Sets the format.
   *
   * @param format {@code text} or {@code json}, case-insensitive
   */
  public void setFormat(String format) {
    this.format = format;
  }

  /**
   * Sets the pattern of the text format.
   *
   * @param pattern a logback layout pattern
   */
  public void setPattern(String pattern) {
    this.pattern = pattern;
  }

  /**
   * Returns the format in use once started.
   *
   * @return {@code text} or {@code json}
   */
  public String format() {
    return delegate instanceof JsonEncoder ? "json" : "text";
  }

  @Override
  public void start() {
    String f = format.trim().toLowerCase(Locale.ROOT);
    if (f.equals("json")) {
      JsonEncoder json = new JsonEncoder();
      json.setWithSequenceNumber(false);
      json.setWithNanoseconds(false);
      json.setWithContext(false);
      json.setWithArguments(false);
      json.setWithMessage(false);
      json.setWithFormattedMessage(true);
      delegate = json;
    } else {
      if (!f.equals("text")) {
        String problem =
            "IDEM_LOG_FORMAT='"
                + format
                + "' is not a log format; use text (the default) or json. Logging text.";
        // Said on stderr, and only recorded as INFO status: a WARN or ERROR status makes logback
        // print its whole status list to stdout, where the stdout sink writes events.
        addInfo(problem);
        System.err.println("idem: " + problem);
      }
      PatternLayoutEncoder text = new PatternLayoutEncoder();
      text.setPattern(pattern);
      delegate = text;
    }
    delegate.setContext(getContext());
    delegate.start();
    super.start();
  }

  @Override
  public void stop() {
    if (delegate != null) {
      delegate.stop();
    }
    super.stop();
  }

  @Override
  public byte[] headerBytes() {
    return delegate().headerBytes();
  }

  @Override
  public byte[] encode(ILoggingEvent event) {
    return delegate().encode(event);
  }

  @Override
  public byte[] footerBytes() {
    return delegate().footerBytes();
  }

  private Encoder<ILoggingEvent> delegate() {
    Encoder<ILoggingEvent> d = delegate;
    if (d == null) {
      throw new IllegalStateException("IdemLogEncoder used before start()");
    }
    return d;
  }
}
