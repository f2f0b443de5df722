package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import example.springboot.ShippingApplication;
import example.springboot.ShippingApplication.Label;
import example.springboot.ShippingApplication.Order;
import example.springboot.ShippingApplication.Shipping;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** Boots the example under {@code examples/spring-boot} on the memory store. */
@SpringBootTest(
    classes = ShippingApplication.class,
    properties =
        "spring.autoconfigure.exclude="
            + "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
class ExampleApplicationTest {
  @Autowired Shipping shipping;

  @Test
  void theExampleShipsEachOrderOnceAndRepeatsTheLabel() {
    Label first = shipping.ship(new Order("o1", "Main St 1"));
    Label again = shipping.ship(new Order("o1", "Main St 1"));
    shipping.ship(new Order("o2", "Side St 2"));

    assertThat(again).isEqualTo(first);
    assertThat(shipping.shipped()).containsExactly("o1", "o2");
  }
}
