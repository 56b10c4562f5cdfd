pub mod bitreader;
