// Tailwind CSS v4 runs as a PostCSS plugin; its only configuration is the CSS in src/app/globals.css.
export default { plugins: { '@tailwindcss/postcss': {} } };
