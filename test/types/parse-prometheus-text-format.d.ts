// parse-prometheus-text-format ships no types: it returns the metric families of a Prometheus text exposition.
declare module "parse-prometheus-text-format" {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
