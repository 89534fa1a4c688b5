/**
 * A weather tool on the free Open-Meteo API (no key): a city is geocoded, then its current
 * weather is fetched.
 *
 * @module
 */

import { z } from "zod";
import { defineTool, type Tool } from "@x/agent";

/** Options of {@link createWeatherTool}. */
export interface WeatherToolOptions {
  /** The geocoding API root (default Open-Meteo's). */
  geocodingURL?: string;
  /** The forecast API root (default Open-Meteo's). */
  forecastURL?: string;
  /** The fetch to use. */
  fetch?: typeof fetch;
}

/**
 * Creates the weather tool.
 *
 * @example
 * ```ts
 * import { createWeatherTool } from "./weather.ts";
 * if (createWeatherTool().capabilities[0] !== "net") throw new Error("unexpected");
 * ```
 */
export function createWeatherTool(options: WeatherToolOptions = {}): Tool<{ city: string }> {
  const geocoding = options.geocodingURL ?? "https://geocoding-api.open-meteo.com";
  const forecast = options.forecastURL ?? "https://api.open-meteo.com";
  const get = async (url: string, signal: AbortSignal) => {
    const response = await (options.fetch ?? fetch)(url, { signal });
    if (!response.ok) throw new Error(`${new URL(url).host} answered ${response.status}`);
    return await response.json();
  };
  return defineTool({
    name: "get_weather",
    description: "Current weather for a city: temperature, wind and conditions.",
    parameters: z.object({ city: z.string().describe("The city, e.g. Paris") }),
    capabilities: ["net"],
    async execute({ city }, ctx) {
      const places = await get(
        `${geocoding}/v1/search?count=1&name=${encodeURIComponent(city)}`,
        ctx.signal,
      );
      const place = places.results?.[0];
      if (!place) throw new Error(`No place called "${city}" was found`);
      const weather = await get(
        `${forecast}/v1/forecast?latitude=${place.latitude}&longitude=${place.longitude}` +
          `&current=temperature_2m,wind_speed_10m,weather_code`,
        ctx.signal,
      );
      const now = weather.current;
      return `${place.name}, ${place.country}: ${now.temperature_2m}°C, wind ` +
        `${now.wind_speed_10m} km/h, ${_conditions(now.weather_code)}`;
    },
  });
}

/** WMO weather codes, as Open-Meteo reports them. */
function _conditions(code: number): string {
  if (code === 0) return "clear sky";
  if (code <= 3) return "partly cloudy";
  if (code <= 48) return "fog";
  if (code <= 67) return "rain";
  if (code <= 77) return "snow";
  if (code <= 82) return "rain showers";
  if (code <= 86) return "snow showers";
  return "thunderstorm";
}
