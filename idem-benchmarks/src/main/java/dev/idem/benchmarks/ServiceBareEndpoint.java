package dev.idem.benchmarks;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.VirtualThreads;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The anchor of the service benchmark: a bare Jetty 12 core handler, set up like the service's
 * (same thread pool, virtual threads on 21+, blocking handler), that reads the body and answers
 * {@code 202 {"accepted":true,"duplicate":false}}, with no dedup, no JSON check and no delivery.
 * Run: {@code java -cp idem-server/target/idem.jar:idem-benchmarks/target/classes
 * dev.idem.benchmarks.ServiceBareEndpoint PORT}.
 */
public final class ServiceBareEndpoint {
  private static final byte[] ACCEPTED =
      "{\"accepted\":true,\"duplicate\":false}".getBytes(StandardCharsets.US_ASCII);

  private ServiceBareEndpoint() {}

  public static void main(String[] args) throws Exception {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 8090;
    QueuedThreadPool pool = new QueuedThreadPool(200, 8);
    pool.setName("bare-http");
    if (VirtualThreads.areSupported()) {
      pool.setVirtualThreadsExecutor(VirtualThreads.getNamedVirtualThreadsExecutor("bare-request"));
    }
    Server server = new Server(pool);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendDateHeader(false);
    ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(http));
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(
        new Handler.Abstract(Handler.Abstract.InvocationType.BLOCKING) {
          @Override
          public boolean handle(Request request, Response response, Callback callback)
              throws Exception {
            try (InputStream in = Content.Source.asInputStream(request)) {
              in.readAllBytes();
            }
            response.setStatus(202);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
            response.write(true, ByteBuffer.wrap(ACCEPTED), callback);
            return true;
          }
        });
    server.start();
    System.err.println("bare endpoint listening on 127.0.0.1:" + connector.getLocalPort());
    server.join();
  }
}
